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

uint64_t wh_crc64nvme(uint64_t crc, const void *p, size_t n)
{
    const uint8_t *b = p;
    pthread_once(&g_once, crc64_tables);
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

/* GF(2) matrix combine, as in zlib's crc32_combine, for the reflected 64-bit polynomial. */
static uint64_t gf2_times(const uint64_t *mat, uint64_t vec)
{
    uint64_t sum = 0;
    for (int i = 0; vec; vec >>= 1, i++)
        if (vec & 1)
            sum ^= mat[i];
    return sum;
}

static void gf2_square(uint64_t *sq, const uint64_t *mat)
{
    for (int n = 0; n < 64; n++)
        sq[n] = gf2_times(mat, mat[n]);
}

uint64_t wh_crc64nvme_combine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b)
{
    uint64_t even[64], odd[64];
    if (len_b == 0)
        return crc_a;
    odd[0] = CRC64NVME_POLY_REFL;
    uint64_t row = 1;
    for (int n = 1; n < 64; n++) {
        odd[n] = row;
        row <<= 1;
    }
    gf2_square(even, odd);
    gf2_square(odd, even);
    do {
        gf2_square(even, odd);
        if (len_b & 1)
            crc_a = gf2_times(even, crc_a);
        len_b >>= 1;
        if (!len_b)
            break;
        gf2_square(odd, even);
        if (len_b & 1)
            crc_a = gf2_times(odd, crc_a);
        len_b >>= 1;
    } while (len_b);
    return crc_a ^ crc_b;
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
