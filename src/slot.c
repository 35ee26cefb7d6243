/* SPDX-License-Identifier: MIT */
/*
 * Key slots for Redis Cluster. The CRC is computed a byte at a time from a
 * 256-entry table that is built once from the polynomial; keys are short, so
 * this is far below the cost of the round trip that follows.
 */
#include "config.h"

#include <pthread.h>

#include "slot.h"

static uint16_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

/* Fills crc_table: the CRC of each byte value shifted into the top. */
static void
build_table(void)
{
    unsigned b, bit;

    for (b = 0; b < 256; b++) {
        uint16_t crc = (uint16_t)(b << 8);

        for (bit = 0; bit < 8; bit++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
        crc_table[b] = crc;
    }
}

uint16_t
cr__crc16(const char *buf, size_t len)
{
    uint16_t crc = 0;
    size_t i;

    pthread_once(&crc_once, build_table);
    for (i = 0; i < len; i++)
        crc = (uint16_t)((crc << 8) ^
                         crc_table[((crc >> 8) ^ (unsigned char)buf[i]) & 0xff]);
    return crc;
}

unsigned
cr__key_slot(const char *key, size_t len)
{
    size_t open, close;

    for (open = 0; open < len && key[open] != '{'; open++)
        ;
    if (open < len) {
        for (close = open + 1; close < len && key[close] != '}'; close++)
            ;
        /* Only a non-empty tag counts: "{}x" hashes the whole key. */
        if (close < len && close > open + 1) {
            key += open + 1;
            len = close - open - 1;
        }
    }
    return cr__crc16(key, len) & (CR__SLOTS - 1);
}
