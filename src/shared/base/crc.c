/* SPDX-License-Identifier: Apache-2.0 */
#include "base/crc.h"
#include "base/codec.h"

#include <isa-l/crc.h>
#include <pthread.h>
#include <string.h>

/* CRC-64/NVME: reflected polynomial 0x9a6c9329ac4bc9b5 (normal 0xad93d23594c93659),
 * init and xorout all ones. Check value for "123456789" is 0xae8b14860a799888. */
#define CRC64NVME_POLY_REFL 0x9a6c9329ac4bc9b5ULL

static uint64_t g_tab[8][256];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void crc64_tables(void)
{
    for (int i = 0; i < 256; i++) {
        uint64_t c = (uint64_t)i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC64NVME_POLY_REFL : c >> 1;
        g_tab[0][i] = c;
    }
    for (int i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            g_tab[t][i] = (g_tab[t - 1][i] >> 8) ^ g_tab[0][g_tab[t - 1][i] & 0xff];
}

/* ---- PCLMULQDQ folding (Gopal et al., "Fast CRC Computation for Generic Polynomials Using
 * PCLMULQDQ", Intel 2009), for the reflected 64-bit polynomial. Constants are derived at start-up
 * from the polynomial, so the table code above is the reference they are tested against. */
#include <cpuid.h>
#include <immintrin.h>

#define CRC64NVME_POLY 0xad93d23594c93659ULL /* normal form, x^64 implied */

static struct {
    __m128i fold1;        /* fold 128 bits:  {x^(128+64), x^128} mod P, reflected << 1 */
    __m128i fold4;        /* fold 512 bits:  {x^(512+64), x^512} */
    __m128i fold2, fold3; /* 256 and 384, to merge the four lanes */
    __m128i barrett;      /* {mu, P'} */
    __m128i fold16;       /* fold 2048 bits: sixteen 128-bit lanes, four in each zmm */
    int ok;               /* PCLMULQDQ */
    int wide;             /* VPCLMULQDQ on 512-bit registers (AVX-512F, and the OS saves them) */
    int wide_cpu;         /* the CPU could (wide may be turned off) */
} g_k;

static uint64_t bitrev64(uint64_t v)
{
    v = ((v >> 1) & 0x5555555555555555ULL) | ((v & 0x5555555555555555ULL) << 1);
    v = ((v >> 2) & 0x3333333333333333ULL) | ((v & 0x3333333333333333ULL) << 2);
    v = ((v >> 4) & 0x0f0f0f0f0f0f0f0fULL) | ((v & 0x0f0f0f0f0f0f0f0fULL) << 4);
    v = ((v >> 8) & 0x00ff00ff00ff00ffULL) | ((v & 0x00ff00ff00ff00ffULL) << 8);
    v = ((v >> 16) & 0x0000ffff0000ffffULL) | ((v & 0x0000ffff0000ffffULL) << 16);
    return (v >> 32) | (v << 32);
}

/* x^e mod P (e >= 64), P normal form with x^64 implied. */
static uint64_t xpow_mod(unsigned e, uint64_t poly)
{
    uint64_t d = poly; /* x^64 mod P */
    for (unsigned i = 64; i < e; i++)
        d = (d << 1) ^ ((d >> 63) ? poly : 0);
    return d;
}

/* floor(x^128 / P) without its x^64 term. */
static uint64_t x128_div(uint64_t poly)
{
    uint64_t q = 0, h = poly;
    for (unsigned i = 0; i < 64; i++) {
        q |= (h & (1ULL << 63)) >> i;
        h = (h << 1) ^ ((h >> 63) ? poly : 0);
    }
    return q;
}

/* Fold constants for a distance of dist bits. pclmul of two bit-reflected 64-bit values yields
 * the reflected product divided by x (127 bits in 128), so each constant carries one extra x:
 * x^(dist+64) and x^dist become reflect(x^(dist+63) mod P) and reflect(x^(dist-1) mod P).
 * (The common "reflect(x^e mod P) << 1" form equals this only when x^(e-1) mod P has no x^63
 * term, which happens to hold for dist=128 here but not for 384.) */
static __m128i kpair(unsigned dist)
{
    uint64_t lo = bitrev64(xpow_mod(dist + 63, CRC64NVME_POLY));
    uint64_t hi = bitrev64(xpow_mod(dist - 1, CRC64NVME_POLY));
    return _mm_set_epi64x((long long)hi, (long long)lo);
}

static void crc64_consts(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_PCLMUL) || !(c & bit_SSE4_1))
        return;
    g_k.fold1 = kpair(128);
    g_k.fold2 = kpair(256);
    g_k.fold3 = kpair(384);
    g_k.fold4 = kpair(512);
    uint64_t mu = (bitrev64(x128_div(CRC64NVME_POLY)) << 1) | 1;
    uint64_t pr = (bitrev64(CRC64NVME_POLY) << 1) | 1;
    g_k.barrett = _mm_set_epi64x((long long)pr, (long long)mu);
    g_k.fold16 = kpair(2048);
    g_k.ok = 1;
    /* VPCLMULQDQ: CPUID.7.0 ECX bit 10; AVX-512F: EBX bit 16; and XCR0 must enable the SSE, AVX
     * and the three AVX-512 state components (bits 1, 2, 5, 6, 7), or the OS does not save the
     * registers. */
    unsigned a7, b7, c7, d7;
    if ((c & bit_OSXSAVE) && __get_cpuid_count(7, 0, &a7, &b7, &c7, &d7) && (b7 & bit_AVX512F) &&
        (c7 & bit_VPCLMULQDQ)) {
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        g_k.wide_cpu = (lo & 0xe6) == 0xe6;
    }
    g_k.wide = g_k.wide_cpu;
}

static inline __m128i fold(__m128i acc, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(acc, k, 0x00), _mm_clmulepi64_si128(acc, k, 0x11));
}

/* Sixteen lanes at once: four zmm accumulators of four 128-bit lanes, 256 bytes a round,
 * each lane folded 2048 bits ahead by VPCLMULQDQ (the same fold as below, four lanes per
 * instruction). Takes n >= 256 bytes from *pp (the state xored into the first 8), and returns
 * the 128-bit remainder of what it took, as the one-lane loop below would have left it; *pp
 * and *pn move past what it took (a multiple of 256). */
__attribute__((target("avx512f,vpclmulqdq"))) static __m128i
crc64_wide(uint64_t state, const uint8_t **pp, size_t *pn)
{
    const uint8_t *p = *pp;
    size_t n = *pn;
    __m512i k = _mm512_broadcast_i32x4(g_k.fold16);
    __m512i z0 = _mm512_xor_si512(_mm512_loadu_si512((const void *)p),
                                  _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, (long long)state));
    __m512i z1 = _mm512_loadu_si512((const void *)(p + 64));
    __m512i z2 = _mm512_loadu_si512((const void *)(p + 128));
    __m512i z3 = _mm512_loadu_si512((const void *)(p + 192));
    p += 256;
    n -= 256;
#define CRC_FOLD512(z, at)                                                                         \
    z = _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(z, k, 0x00),                            \
                                  _mm512_clmulepi64_epi128(z, k, 0x11),                            \
                                  _mm512_loadu_si512((const void *)(at)), 0x96)
    while (n >= 256) {
        CRC_FOLD512(z0, p);
        CRC_FOLD512(z1, p + 64);
        CRC_FOLD512(z2, p + 128);
        CRC_FOLD512(z3, p + 192);
        p += 256;
        n -= 256;
    }
#undef CRC_FOLD512
    /* The sixteen lanes in data order, folded one into the next 128 bits apart. */
    __m128i lane[16];
    _mm512_storeu_si512((void *)&lane[0], z0);
    _mm512_storeu_si512((void *)&lane[4], z1);
    _mm512_storeu_si512((void *)&lane[8], z2);
    _mm512_storeu_si512((void *)&lane[12], z3);
    __m128i acc = lane[0];
    for (int i = 1; i < 16; i++)
        acc = _mm_xor_si128(fold(acc, g_k.fold1), lane[i]);
    *pp = p;
    *pn = n;
    return acc;
}

/* CRC state (pre/post inversion is the caller's) over n bytes, n a multiple of 16, n >= 16. */
static uint64_t crc64_clmul(uint64_t state, const uint8_t *p, size_t n)
{
    __m128i acc0;
    if (g_k.wide && n >= 512) {
        acc0 = crc64_wide(state, &p, &n); /* then the tail (< 256 bytes) as below */
    } else {
        acc0 =
            _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_set_epi64x(0, (long long)state));
        p += 16;
        n -= 16;
    }
    if (n >= 48) {
        __m128i acc1 = _mm_loadu_si128((const __m128i *)p);
        __m128i acc2 = _mm_loadu_si128((const __m128i *)(p + 16));
        __m128i acc3 = _mm_loadu_si128((const __m128i *)(p + 32));
        p += 48;
        n -= 48;
        while (n >= 64) {
            acc0 = _mm_xor_si128(fold(acc0, g_k.fold4), _mm_loadu_si128((const __m128i *)p));
            acc1 = _mm_xor_si128(fold(acc1, g_k.fold4), _mm_loadu_si128((const __m128i *)(p + 16)));
            acc2 = _mm_xor_si128(fold(acc2, g_k.fold4), _mm_loadu_si128((const __m128i *)(p + 32)));
            acc3 = _mm_xor_si128(fold(acc3, g_k.fold4), _mm_loadu_si128((const __m128i *)(p + 48)));
            p += 64;
            n -= 64;
        }
        acc0 = _mm_xor_si128(_mm_xor_si128(fold(acc0, g_k.fold3), fold(acc1, g_k.fold2)),
                             _mm_xor_si128(fold(acc2, g_k.fold1), acc3));
    }
    while (n >= 16) {
        acc0 = _mm_xor_si128(fold(acc0, g_k.fold1), _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
    /* Append the 64 implied zero bits, then Barrett-reduce 128 -> 64. */
    acc0 = _mm_xor_si128(_mm_clmulepi64_si128(acc0, g_k.fold1, 0x10), _mm_srli_si128(acc0, 8));
    __m128i t1 = _mm_clmulepi64_si128(acc0, g_k.barrett, 0x00);
    acc0 = _mm_xor_si128(
        acc0, _mm_xor_si128(_mm_clmulepi64_si128(t1, g_k.barrett, 0x10), _mm_slli_si128(t1, 8)));
    return (uint64_t)_mm_extract_epi64(acc0, 1);
}

static void crc64_init(void)
{
    crc64_tables();
    crc64_consts();
}

uint64_t wh_crc64nvme(uint64_t crc, const void *p, size_t n)
{
    const uint8_t *b = p;
    pthread_once(&g_once, crc64_init);
    if (!g_k.ok || n < 64)
        return wh_crc64nvme_ref(crc, p, n);
    size_t bulk = n & ~(size_t)15;
    uint64_t st = crc64_clmul(~crc, b, bulk);
    return wh_crc64nvme_ref(~st, b + bulk, n - bulk);
}

const char *wh_crc64nvme_impl(void)
{
    pthread_once(&g_once, crc64_init);
    return g_k.wide ? "vpclmulqdq-512" : g_k.ok ? "pclmulqdq-128" : "table";
}

int wh_crc64nvme_set_impl(const char *name)
{
    pthread_once(&g_once, crc64_init);
    if (!strcmp(name, "vpclmulqdq-512")) {
        if (!g_k.wide_cpu)
            return -1;
        g_k.wide = 1;
    } else if (!strcmp(name, "pclmulqdq-128")) {
        if (!g_k.ok)
            return -1;
        g_k.wide = 0;
    } else {
        return -1;
    }
    return 0;
}

uint64_t wh_crc64nvme_ref(uint64_t crc, const void *p, size_t n)
{
    const uint8_t *b = p;
    pthread_once(&g_once, crc64_init);
    crc = ~crc;
    while (n && ((uintptr_t)b & 7)) {
        crc = g_tab[0][(crc ^ *b++) & 0xff] ^ (crc >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, b, 8);
        crc ^= v;
        crc = g_tab[7][crc & 0xff] ^ g_tab[6][(crc >> 8) & 0xff] ^ g_tab[5][(crc >> 16) & 0xff] ^
              g_tab[4][(crc >> 24) & 0xff] ^ g_tab[3][(crc >> 32) & 0xff] ^
              g_tab[2][(crc >> 40) & 0xff] ^ g_tab[1][(crc >> 48) & 0xff] ^ g_tab[0][crc >> 56];
        b += 8;
        n -= 8;
    }
    while (n--)
        crc = g_tab[0][(crc ^ *b++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

uint32_t wh_crc32c(uint32_t crc, const void *p, size_t n)
{
    return ~crc32_iscsi((unsigned char *)(uintptr_t)p, (int)n, ~crc);
}

/* GF(2) matrices, as in zlib's old crc32_combine, for the reflected 64-bit polynomial: the
 * shift operator below (made once per length, then applied in 64 steps). */
static uint64_t gf2_times(const uint64_t *mat, uint64_t vec)
{
    uint64_t sum = 0;
    for (int i = 0; vec; vec >>= 1, i++)
        if (vec & 1)
            sum ^= mat[i];
    return sum;
}

static void gf2_square_n(uint64_t *sq, const uint64_t *mat, int rows)
{
    for (int n = 0; n < rows; n++)
        sq[n] = gf2_times(mat, mat[n]);
}

static void gf2_square(uint64_t *sq, const uint64_t *mat)
{
    gf2_square_n(sq, mat, 64);
}

/* Combine by multiplication modulo the polynomial (zlib's multmodp and x2nmodp): crc(A||B)
 * = crc(A) * x^(8 len(B)) mod P ^ crc(B), with x^(2^k) mod P from a table made once. A few
 * hundred shifts per call, where squaring 64x64 matrices took about a hundred thousand (half
 * of a gateway's CPU on RDMA GETs went there). Both polynomials are reflected: bit 63 (31) is
 * x^0. */
#define X2N_ROWS 67 /* x^(2^k) for k < 67: lengths below 2^64 bytes, counted in bits from 2^3 */

static uint64_t g_x2n64[X2N_ROWS];
static uint32_t g_x2n32[X2N_ROWS];
static pthread_once_t g_x2n_once = PTHREAD_ONCE_INIT;

/* a * b mod P; a must not be 0 (every power of x is not). */
static uint64_t mulmod64(uint64_t a, uint64_t b)
{
    uint64_t m = 1ULL << 63, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0)
                break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ CRC64NVME_POLY_REFL : b >> 1;
    }
    return p;
}

static uint32_t mulmod32(uint32_t a, uint32_t b)
{
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0)
                break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ 0x82f63b78u : b >> 1;
    }
    return p;
}

static void x2n_init(void)
{
    g_x2n64[0] = 1ULL << 62; /* x^1 */
    g_x2n32[0] = 1u << 30;
    for (int k = 1; k < X2N_ROWS; k++) {
        g_x2n64[k] = mulmod64(g_x2n64[k - 1], g_x2n64[k - 1]);
        g_x2n32[k] = mulmod32(g_x2n32[k - 1], g_x2n32[k - 1]);
    }
}

uint32_t wh_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
    if (len_b == 0)
        return crc_a;
    pthread_once(&g_x2n_once, x2n_init);
    uint32_t p = 1u << 31; /* x^0 */
    for (unsigned k = 3; len_b; len_b >>= 1, k++)
        if (len_b & 1)
            p = mulmod32(g_x2n32[k], p);
    return mulmod32(p, crc_a) ^ crc_b;
}

uint64_t wh_crc64nvme_combine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b)
{
    if (len_b == 0)
        return crc_a;
    pthread_once(&g_x2n_once, x2n_init);
    uint64_t p = 1ULL << 63; /* x^0 */
    for (unsigned k = 3; len_b; len_b >>= 1, k++)
        if (len_b & 1)
            p = mulmod64(g_x2n64[k], p);
    return mulmod64(p, crc_a) ^ crc_b;
}

void wh_crc64nvme_shift_init(wh_crc64_shift_t *op, uint64_t len_b)
{
    uint64_t cur[64], tmp[64], acc[64];
    /* cur: the operator of one zero bit, squared three times: one zero byte */
    cur[0] = CRC64NVME_POLY_REFL;
    for (int n = 1; n < 64; n++)
        cur[n] = 1ULL << (n - 1);
    for (int i = 0; i < 3; i++) {
        gf2_square(tmp, cur);
        memcpy(cur, tmp, sizeof cur);
    }
    for (int n = 0; n < 64; n++)
        acc[n] = 1ULL << n; /* identity */
    while (len_b) {
        if (len_b & 1) {
            for (int n = 0; n < 64; n++)
                tmp[n] = gf2_times(cur, acc[n]);
            memcpy(acc, tmp, sizeof acc);
        }
        len_b >>= 1;
        if (len_b) {
            gf2_square(tmp, cur);
            memcpy(cur, tmp, sizeof cur);
        }
    }
    memcpy(op->m, acc, sizeof acc);
}

uint64_t wh_crc64nvme_shift_combine(const wh_crc64_shift_t *op, uint64_t crc_a, uint64_t crc_b)
{
    return gf2_times(op->m, crc_a) ^ crc_b;
}

void wh_crc64nvme_b64(uint64_t crc, char out[13])
{
    uint8_t be[8];
    for (int i = 0; i < 8; i++)
        be[i] = (uint8_t)(crc >> (56 - 8 * i));
    wh_base64_encode(be, 8, out);
}

void wh_crc32c_b64(uint32_t crc, char out[9])
{
    uint8_t be[4] = {(uint8_t)(crc >> 24), (uint8_t)(crc >> 16), (uint8_t)(crc >> 8), (uint8_t)crc};
    wh_base64_encode(be, 4, out);
}

int wh_crc64nvme_from_b64(const char *s, uint64_t *out)
{
    uint8_t be[9];
    if (wh_base64_decode(s, strlen(s), be, sizeof be) != 8)
        return -1;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | be[i];
    *out = v;
    return 0;
}

int wh_crc32c_from_b64(const char *s, uint32_t *out)
{
    uint8_t be[5];
    if (wh_base64_decode(s, strlen(s), be, sizeof be) != 4)
        return -1;
    *out = (uint32_t)be[0] << 24 | (uint32_t)be[1] << 16 | (uint32_t)be[2] << 8 | be[3];
    return 0;
}
