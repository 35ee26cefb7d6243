/* SPDX-License-Identifier: MIT */
package org.redisson.codec;

import org.redisson.client.codec.BaseCodec;
import org.redisson.client.protocol.Decoder;
import org.redisson.client.protocol.Encoder;

/**
 * credisson test build: stands in for Redisson's MarshallingCodec, the
 * default codec of 3.13 to 3.16, which needs JBoss Marshalling (not
 * packaged by Debian). Redisson makes one only when the configuration
 * names no codec; the peer always names StringCodec, and the
 * synchronizers pass their own codecs. Making one fails.
 */
public class MarshallingCodec extends BaseCodec {
    public MarshallingCodec() {
        throw new UnsupportedOperationException(
                "credisson test build: no JBoss Marshalling; set a codec");
    }

    public MarshallingCodec(ClassLoader classLoader) {
        this();
    }

    public MarshallingCodec(ClassLoader classLoader, MarshallingCodec codec) {
        this();
    }

    @Override
    public Decoder<Object> getValueDecoder() {
        throw new UnsupportedOperationException();
    }

    @Override
    public Encoder getValueEncoder() {
        throw new UnsupportedOperationException();
    }
}
