/* SPDX-License-Identifier: MIT */
/*
 * credisson: Redisson's distributed synchronizers for C, wire-compatible with
 * Java Redisson. Include only this header.
 *
 * Thread safety: one cr_client per process, shared by all threads. Object
 * handles may be shared too; ownership is per thread (client id + thread id),
 * as in Redisson. Callbacks run on the client's watchdog thread and must not
 * block.
 */
#ifndef CREDISSON_H
#define CREDISSON_H

#include <credisson/version.h>
#include <credisson/status.h>
#include <credisson/client.h>
#include <credisson/lock.h>
#include <credisson/rwlock.h>
#include <credisson/semaphore.h>
#include <credisson/latch.h>
#include <credisson/ratelimiter.h>
#include <credisson/barrier.h>
#include <credisson/condition.h>
#include <credisson/multilock.h>
#include <credisson/inspect.h>
#include <credisson/async.h>

#endif
