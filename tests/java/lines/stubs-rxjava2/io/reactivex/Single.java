/* SPDX-License-Identifier: MIT */
package io.reactivex;

/**
 * credisson test build: a compile-only stand-in for RxJava 2's Single (not
 * packaged by Debian), which Redisson 3.13's *Rx interfaces name as a
 * return type. The RxJava client is never compiled or made.
 */
public abstract class Single<T> {
    private Single() {
    }
}
