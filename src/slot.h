/* SPDX-License-Identifier: MIT */
/*
 * Redis Cluster key slots, a pure module: the CRC16 (XMODEM) of a key, or of
 * its hash tag, modulo 16384, as the Redis Cluster specification defines
 * it. The hash tag is the text between the first '{' and the first '}'
 * after it, when that text is not empty.
 */
#ifndef CR_SLOT_H
#define CR_SLOT_H

#include <stddef.h>
#include <stdint.h>

#define CR__SLOTS 16384

/* cr__crc16: CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0). */
uint16_t cr__crc16(const char *buf, size_t len);

/* cr__key_slot: the cluster slot (0..16383) of a key of `len` bytes. */
unsigned cr__key_slot(const char *key, size_t len);

#endif
