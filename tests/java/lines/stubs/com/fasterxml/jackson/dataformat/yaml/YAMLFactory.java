/* SPDX-License-Identifier: MIT */
package com.fasterxml.jackson.dataformat.yaml;

/**
 * credisson test build: a stand-in for Jackson's YAML format, which Debian
 * 12 does not package (libjackson2-dataformat-yaml is not in bookworm).
 * Redisson's ConfigSupport makes one when it is created; only reading and
 * writing configuration files in YAML would use it, and the peer builds
 * its Config in code. As a plain JsonFactory it parses JSON, not YAML.
 */
public class YAMLFactory extends com.fasterxml.jackson.core.JsonFactory {
    private static final long serialVersionUID = 1L;
}
