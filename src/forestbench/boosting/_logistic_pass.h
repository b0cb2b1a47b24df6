/* One pass of the logistic line search of a tree step (forestbench.boosting._loop).
 *
 * For the samples i of one output column, with a_i = 2 / (1 + e_i T_i), b_i = a_i (2 - a_i), g_i = g[leaf_i] and
 * T_i = tab[2 leaf_i + (y_i < 0)], the pass returns
 *     out[0] = sum g_i y_i a_i,   out[1] = sum g_i^2 b_i,   out[2] = sum g_i^3 y_i b_i (2 - 2 a_i),
 *     out[3] = sum |g_i|,
 * the slope, curvature and third derivative of the loss along the step (up to their signs) and the step's scale.
 *
 * The pass does one division per sample and reads two small per-leaf tables. The sums are kept in eight
 * interleaved lanes (sample i goes to lane i mod 8 for i < 8 floor(n / 8), the remaining ones to lanes 0, 1, ... in
 * order), combined as ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). Every implementation below follows that
 * order operation by operation and uses only correctly rounded IEEE operations (no fused multiply-add: the
 * vector functions do not enable FMA and the extensions are built with -ffp-contract=off), so the AVX2 version
 * (table reads by gathers) and the AVX-512 version (trees of at most 8 leaves: the tables sit in registers and are
 * read by permutations), chosen at run time where the processor has them, give bit for bit the results of the
 * portable loop. */
#ifndef FORESTBENCH_LOGISTIC_PASS_H
#define FORESTBENCH_LOGISTIC_PASS_H

#include <math.h>
#include <stdint.h>

#define FB_LANES 8

/* sample i added to lane k of the four sums */
static inline void fb_logistic_pass_one(const double* y, const double* e, const intptr_t* leaf, const double* tab,
                                        const double* g, intptr_t i, int k, double acc[4][FB_LANES]) {
    double gi = g[leaf[i]];
    double yi = y[i];
    double T = tab[2 * leaf[i] + (yi < 0.0)];
    double a = 2.0 / (1.0 + e[i] * T);
    double b = a * (2.0 - a);
    double gy = gi * yi;
    double g2 = gi * gi;
    acc[0][k] += gy * a;
    acc[1][k] += g2 * b;
    acc[2][k] += (g2 * gy) * (b * (2.0 - 2.0 * a));
    acc[3][k] += fabs(gi);
}

/* samples start..n-1 added to lanes 0, 1, ... (fewer than FB_LANES of them) */
static void fb_logistic_pass_tail(const double* y, const double* e, const intptr_t* leaf, const double* tab,
                                  const double* g, intptr_t start, intptr_t n, double acc[4][FB_LANES]) {
    intptr_t i;
    int k = 0;
    for (i = start; i < n; i++, k++) {
        fb_logistic_pass_one(y, e, leaf, tab, g, i, k, acc);
    }
}

static void fb_logistic_pass_finish(double acc[4][FB_LANES], double* out) {
    int s;
    for (s = 0; s < 4; s++) {
        out[s] = ((acc[s][0] + acc[s][1]) + (acc[s][2] + acc[s][3]))
                 + ((acc[s][4] + acc[s][5]) + (acc[s][6] + acc[s][7]));
    }
}

static void fb_logistic_pass_portable(const double* y, const double* e, const intptr_t* leaf, const double* tab,
                                      const double* g, intptr_t n, double* out) {
    double acc[4][FB_LANES] = {{0.0}};
    intptr_t i, m = n - n % FB_LANES;
    int k;
    for (i = 0; i < m; i += FB_LANES) {
        for (k = 0; k < FB_LANES; k++) {
            fb_logistic_pass_one(y, e, leaf, tab, g, i + k, k, acc);
        }
    }
    fb_logistic_pass_tail(y, e, leaf, tab, g, m, n, acc);
    fb_logistic_pass_finish(acc, out);
}

/* E_i *= tab[2 leaf_i + (y_i < 0)]: the kept exp(2 y f) moved by a tree step (one product per sample, so every
 * implementation gives the same bits) */
static void fb_logistic_update_portable(const double* y, double* E, const intptr_t* leaf, const double* tab,
                                        intptr_t n) {
    intptr_t i;
    for (i = 0; i < n; i++) {
        E[i] *= tab[2 * leaf[i] + (y[i] < 0.0)];
    }
}

/* z[i zstride] += v r_i with the negative gradient r_i = 2 y_i / (1 + E_i): one output's share of a projected
 * gradient, summed from the kept E without storing r (elementwise, so every implementation gives the same bits) */
static void fb_project_gradient_portable(const double* y, const double* E, double v, double* z, intptr_t zstride,
                                         intptr_t n) {
    intptr_t i;
    for (i = 0; i < n; i++) {
        z[i * zstride] += v * (2.0 * y[i] / (1.0 + E[i]));
    }
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && INTPTR_MAX == INT64_MAX
#include <immintrin.h>
#define FB_HAVE_VECTOR_PASS 1

/* four samples: the lane sums s[0..3] of the four sums */
#define FB_AVX2_STEP(OFF, S0, S1, S2, S3)                                                                       \
    {                                                                                                           \
        __m256i l4 = _mm256_loadu_si256((const __m256i*) (leaf + i + OFF));                                     \
        __m256d y4 = _mm256_loadu_pd(y + i + OFF);                                                              \
        __m256d e4 = _mm256_loadu_pd(e + i + OFF);                                                              \
        __m256i neg = _mm256_and_si256(_mm256_castpd_si256(_mm256_cmp_pd(y4, zero, _CMP_LT_OQ)), lowbit);       \
        __m256d T = _mm256_i64gather_pd(tab, _mm256_add_epi64(_mm256_slli_epi64(l4, 1), neg), 8);               \
        __m256d g4 = _mm256_i64gather_pd(g, l4, 8);                                                             \
        __m256d a = _mm256_div_pd(two, _mm256_add_pd(one, _mm256_mul_pd(e4, T)));                               \
        __m256d b = _mm256_mul_pd(a, _mm256_sub_pd(two, a));                                                    \
        __m256d gy = _mm256_mul_pd(g4, y4);                                                                     \
        __m256d g2 = _mm256_mul_pd(g4, g4);                                                                     \
        S0 = _mm256_add_pd(S0, _mm256_mul_pd(gy, a));                                                           \
        S1 = _mm256_add_pd(S1, _mm256_mul_pd(g2, b));                                                           \
        S2 = _mm256_add_pd(S2, _mm256_mul_pd(_mm256_mul_pd(g2, gy),                                             \
                                             _mm256_mul_pd(b, _mm256_sub_pd(two, _mm256_mul_pd(two, a)))));     \
        S3 = _mm256_add_pd(S3, _mm256_and_pd(g4, nosign));                                                      \
    }

__attribute__((target("avx2")))
static void fb_logistic_pass_avx2(const double* y, const double* e, const intptr_t* leaf, const double* tab,
                                  const double* g, intptr_t n, double* out) {
    double acc[4][FB_LANES];
    intptr_t i, m = n - n % FB_LANES;
    const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0), two = _mm256_set1_pd(2.0);
    const __m256d nosign = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    const __m256i lowbit = _mm256_set1_epi64x(1);
    __m256d s0 = zero, s1 = zero, s2 = zero, s3 = zero, t0 = zero, t1 = zero, t2 = zero, t3 = zero;
    for (i = 0; i < m; i += FB_LANES) {
        FB_AVX2_STEP(0, s0, s1, s2, s3)
        FB_AVX2_STEP(4, t0, t1, t2, t3)
    }
    _mm256_storeu_pd(acc[0], s0);
    _mm256_storeu_pd(acc[1], s1);
    _mm256_storeu_pd(acc[2], s2);
    _mm256_storeu_pd(acc[3], s3);
    _mm256_storeu_pd(acc[0] + 4, t0);
    _mm256_storeu_pd(acc[1] + 4, t1);
    _mm256_storeu_pd(acc[2] + 4, t2);
    _mm256_storeu_pd(acc[3] + 4, t3);
    fb_logistic_pass_tail(y, e, leaf, tab, g, m, n, acc);
    fb_logistic_pass_finish(acc, out);
}

/* at most 8 leaves: g (8 entries) and tab (16 entries) are held in registers */
__attribute__((target("avx512f")))
static void fb_logistic_pass_avx512(const double* y, const double* e, const intptr_t* leaf, const double* tab,
                                    const double* g, intptr_t n_leaves, intptr_t n, double* out) {
    double acc[4][FB_LANES];
    double gpad[8] = {0.0}, tpad[16] = {0.0};
    intptr_t i, m = n - n % FB_LANES;
    const __m512d zero = _mm512_setzero_pd(), one = _mm512_set1_pd(1.0), two = _mm512_set1_pd(2.0);
    const __m512i one_i = _mm512_set1_epi64(1);
    __m512d s0 = zero, s1 = zero, s2 = zero, s3 = zero, G, T_lo, T_hi;
    for (i = 0; i < n_leaves; i++) {
        gpad[i] = g[i];
        tpad[2 * i] = tab[2 * i];
        tpad[2 * i + 1] = tab[2 * i + 1];
    }
    G = _mm512_loadu_pd(gpad);
    T_lo = _mm512_loadu_pd(tpad);
    T_hi = _mm512_loadu_pd(tpad + 8);
    for (i = 0; i < m; i += FB_LANES) {
        __m512i l8 = _mm512_loadu_si512((const void*) (leaf + i));
        __m512d y8 = _mm512_loadu_pd(y + i);
        __m512d e8 = _mm512_loadu_pd(e + i);
        __mmask8 neg = _mm512_cmp_pd_mask(y8, zero, _CMP_LT_OQ);
        __m512i l2 = _mm512_slli_epi64(l8, 1);
        __m512i idx = _mm512_mask_add_epi64(l2, neg, l2, one_i);
        __m512d T = _mm512_permutex2var_pd(T_lo, idx, T_hi);
        __m512d g8 = _mm512_permutexvar_pd(l8, G);
        __m512d a = _mm512_div_pd(two, _mm512_add_pd(one, _mm512_mul_pd(e8, T)));
        __m512d b = _mm512_mul_pd(a, _mm512_sub_pd(two, a));
        __m512d gy = _mm512_mul_pd(g8, y8);
        __m512d g2 = _mm512_mul_pd(g8, g8);
        s0 = _mm512_add_pd(s0, _mm512_mul_pd(gy, a));
        s1 = _mm512_add_pd(s1, _mm512_mul_pd(g2, b));
        s2 = _mm512_add_pd(s2, _mm512_mul_pd(_mm512_mul_pd(g2, gy),
                                             _mm512_mul_pd(b, _mm512_sub_pd(two, _mm512_mul_pd(two, a)))));
        s3 = _mm512_add_pd(s3, _mm512_abs_pd(g8));
    }
    _mm512_storeu_pd(acc[0], s0);
    _mm512_storeu_pd(acc[1], s1);
    _mm512_storeu_pd(acc[2], s2);
    _mm512_storeu_pd(acc[3], s3);
    fb_logistic_pass_tail(y, e, leaf, tab, g, m, n, acc);
    fb_logistic_pass_finish(acc, out);
}

__attribute__((target("avx512f")))
static void fb_logistic_update_avx512(const double* y, double* E, const intptr_t* leaf, const double* tab,
                                      intptr_t n_leaves, intptr_t n) {
    double tpad[16] = {0.0};
    intptr_t i, m = n - n % 8;
    const __m512d zero = _mm512_setzero_pd();
    const __m512i one_i = _mm512_set1_epi64(1);
    __m512d T_lo, T_hi;
    for (i = 0; i < 2 * n_leaves; i++) {
        tpad[i] = tab[i];
    }
    T_lo = _mm512_loadu_pd(tpad);
    T_hi = _mm512_loadu_pd(tpad + 8);
    for (i = 0; i < m; i += 8) {
        __m512i l2 = _mm512_slli_epi64(_mm512_loadu_si512((const void*) (leaf + i)), 1);
        __mmask8 neg = _mm512_cmp_pd_mask(_mm512_loadu_pd(y + i), zero, _CMP_LT_OQ);
        __m512d T = _mm512_permutex2var_pd(T_lo, _mm512_mask_add_epi64(l2, neg, l2, one_i), T_hi);
        _mm512_storeu_pd(E + i, _mm512_mul_pd(_mm512_loadu_pd(E + i), T));
    }
    fb_logistic_update_portable(y + m, E + m, leaf + m, tab, n - m);
}

__attribute__((target("avx512f")))
static void fb_project_gradient_avx512(const double* y, const double* E, double v, double* z, intptr_t n) {
    intptr_t i, m = n - n % 8;
    const __m512d one = _mm512_set1_pd(1.0), two = _mm512_set1_pd(2.0), v8 = _mm512_set1_pd(v);
    for (i = 0; i < m; i += 8) {
        __m512d r = _mm512_div_pd(_mm512_mul_pd(two, _mm512_loadu_pd(y + i)),
                                  _mm512_add_pd(one, _mm512_loadu_pd(E + i)));
        _mm512_storeu_pd(z + i, _mm512_add_pd(_mm512_loadu_pd(z + i), _mm512_mul_pd(v8, r)));
    }
    fb_project_gradient_portable(y + m, E + m, v, z + m, 1, n - m);
}

static int fb_pass_level = -1;   /* -1 not chosen yet, 0 portable, 1 AVX2, 2 AVX-512 (trees of <= 8 leaves) */

/* wanted: the highest level allowed (0 portable, 1 AVX2, 2 AVX-512; -1 the best the processor has); returns the
 * level in use. Tests lower it to compare the implementations. */
static int fb_logistic_pass_level(int wanted) {
    int best = 0;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) {
        best = 1;
    }
    if (__builtin_cpu_supports("avx512f")) {
        best = 2;
    }
    fb_pass_level = (wanted < 0 || wanted > best) ? best : wanted;
    return fb_pass_level;
}
#else
#define FB_HAVE_VECTOR_PASS 0
static int fb_logistic_pass_level(int wanted) { (void) wanted; return 0; }
#endif

static void fb_logistic_pass(const double* y, const double* e, const intptr_t* leaf, const double* tab,
                             const double* g, intptr_t n_leaves, intptr_t n, double* out) {
#if FB_HAVE_VECTOR_PASS
    if (fb_pass_level < 0) {
        fb_logistic_pass_level(-1);
    }
    if (fb_pass_level >= 2 && n_leaves <= 8) {
        fb_logistic_pass_avx512(y, e, leaf, tab, g, n_leaves, n, out);
        return;
    }
    if (fb_pass_level >= 1) {
        fb_logistic_pass_avx2(y, e, leaf, tab, g, n, out);
        return;
    }
#endif
    fb_logistic_pass_portable(y, e, leaf, tab, g, n, out);
}

static void fb_logistic_update(const double* y, double* E, const intptr_t* leaf, const double* tab,
                               intptr_t n_leaves, intptr_t n) {
#if FB_HAVE_VECTOR_PASS
    if (fb_pass_level < 0) {
        fb_logistic_pass_level(-1);
    }
    if (fb_pass_level >= 2 && n_leaves <= 8) {
        fb_logistic_update_avx512(y, E, leaf, tab, n_leaves, n);
        return;
    }
#endif
    fb_logistic_update_portable(y, E, leaf, tab, n);
}

static void fb_project_gradient(const double* y, const double* E, double v, double* z, intptr_t zstride,
                                intptr_t n) {
#if FB_HAVE_VECTOR_PASS
    if (fb_pass_level < 0) {
        fb_logistic_pass_level(-1);
    }
    if (fb_pass_level >= 2 && zstride == 1) {
        fb_project_gradient_avx512(y, E, v, z, n);
        return;
    }
#endif
    fb_project_gradient_portable(y, E, v, z, zstride, n);
}

#endif
