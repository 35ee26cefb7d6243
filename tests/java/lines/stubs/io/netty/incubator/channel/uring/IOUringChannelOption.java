/* SPDX-License-Identifier: MIT */
package io.netty.incubator.channel.uring;

import io.netty.channel.ChannelOption;

/**
 * credisson test build: a compile-only stand-in for the incubator io_uring
 * channel options Redisson sets on that transport (see
 * IOUringSocketChannel); the names are Netty's, the options never used.
 */
public final class IOUringChannelOption {
    public static final ChannelOption<Integer> TCP_KEEPCNT =
            ChannelOption.valueOf("CREDISSON_STUB_IOURING_TCP_KEEPCNT");
    public static final ChannelOption<Integer> TCP_KEEPIDLE =
            ChannelOption.valueOf("CREDISSON_STUB_IOURING_TCP_KEEPIDLE");
    public static final ChannelOption<Integer> TCP_KEEPINTVL =
            ChannelOption.valueOf("CREDISSON_STUB_IOURING_TCP_KEEPINTVL");
    public static final ChannelOption<Integer> TCP_USER_TIMEOUT =
            ChannelOption.valueOf("CREDISSON_STUB_IOURING_TCP_USER_TIMEOUT");

    private IOUringChannelOption() {
    }
}
