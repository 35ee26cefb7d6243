/* SPDX-License-Identifier: MIT */
package jodd.introspector;

/**
 * credisson test build: a compile-only stand-in for jodd's
 * ClassIntrospector (see jodd.bean.BeanCopy).
 */
public class ClassIntrospector {
    private static final ClassIntrospector INSTANCE = new ClassIntrospector();

    public static ClassIntrospector get() {
        return INSTANCE;
    }

    public void reset() {
    }
}
