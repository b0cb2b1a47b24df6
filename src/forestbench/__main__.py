from forestbench.cli import main

raise SystemExit(main())
