/* SPDX-License-Identifier: MIT */
package jodd.bean;

/**
 * credisson test build: a compile-only stand-in for jodd's BeanCopy as
 * Redisson before 3.24 calls and subclasses it (jodd is not packaged by
 * Debian). Only live objects (RLiveObjectService) use it; copying fails.
 */
public class BeanCopy {
    protected BeanUtilBean beanUtil;
    protected boolean declared;
    protected boolean forced;

    public BeanCopy(Object source, Object destination) {
    }

    public static BeanCopy beans(Object source, Object destination) {
        return new BeanCopy(source, destination);
    }

    public BeanCopy declared(boolean declared, boolean forced) {
        return this;
    }

    public BeanCopy ignoreNulls(boolean ignoreNulls) {
        return this;
    }

    public BeanCopy exclude(String... names) {
        return this;
    }

    protected void visit() {
        throw new UnsupportedOperationException("credisson test build: no jodd");
    }

    public void copy() {
        visit();
    }
}
