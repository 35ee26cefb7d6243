/* SPDX-License-Identifier: MIT */
package io.netty.incubator.channel.uring;

import java.net.InetSocketAddress;

/**
 * credisson test build: a compile-only stand-in for Netty's incubator
 * io_uring datagram channel (see IOUringSocketChannel).
 */
public abstract class IOUringDatagramChannel extends io.netty.channel.AbstractChannel
        implements io.netty.channel.socket.DatagramChannel {
    private IOUringDatagramChannel() {
        super(null);
    }

    @Override
    public abstract InetSocketAddress localAddress();

    @Override
    public abstract InetSocketAddress remoteAddress();
}
