/* crc32c.c: CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of
 * every profd record on disk. Table-driven, eight bytes at a time ("slicing by
 * 8"); the tables are built once, on first use. crc32c("123456789") = 0xE3069283. */
#include <pthread.h>
#include <stdint.h>

#include "wal.h"

#define CRC32C_POLY 0x82F63B78u

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^
					  crc_table[0][crc_table[t - 1][i] & 0xff];
}

uint32_t pd_crc32c(uint32_t crc, const void *p, size_t len)
{
	const uint8_t *b = p;

	pthread_once(&crc_once, crc_init);
	crc = ~crc;
	while (len >= 8) {
		/* little-endian byte order of the reflected CRC, independent of the host */
		uint32_t lo = crc ^ ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
				     (uint32_t)b[3] << 24);
		uint32_t hi = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 |
			      (uint32_t)b[7] << 24;
		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		      crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		b += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_table[0][(crc ^ *b++) & 0xff];
	return ~crc;
}
