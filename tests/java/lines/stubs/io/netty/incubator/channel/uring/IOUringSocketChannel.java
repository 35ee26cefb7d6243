/* SPDX-License-Identifier: MIT */
package io.netty.incubator.channel.uring;

/**
 * credisson test build: a compile-only stand-in for Netty's incubator
 * io_uring socket channel, which Debian does not package. Redisson reaches
 * it only with TransportMode.IO_URING; the peer uses NIO.
 */
public abstract class IOUringSocketChannel
        extends io.netty.channel.socket.nio.NioSocketChannel {
    private IOUringSocketChannel() {
    }
}
