/* SPDX-License-Identifier: MIT */
package io.netty.incubator.channel.uring;

import java.util.concurrent.ThreadFactory;

/**
 * credisson test build: a compile-only stand-in for Netty's incubator
 * io_uring event loop group (see IOUringSocketChannel); making one fails.
 */
public class IOUringEventLoopGroup extends io.netty.channel.nio.NioEventLoopGroup {
    public IOUringEventLoopGroup(int threads, ThreadFactory factory) {
        super(1, factory);
        throw new UnsupportedOperationException(
                "credisson test build: no io_uring transport");
    }
}
