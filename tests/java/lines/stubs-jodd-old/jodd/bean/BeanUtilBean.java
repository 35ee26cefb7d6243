/* SPDX-License-Identifier: MIT */
package jodd.bean;

/**
 * credisson test build: a compile-only stand-in for jodd's BeanUtilBean
 * (see BeanCopy); setting a property fails.
 */
public class BeanUtilBean implements BeanUtil {
    public BeanUtilBean declared(boolean declared) {
        return this;
    }

    public BeanUtilBean forced(boolean forced) {
        return this;
    }

    @Override
    public void setSimpleProperty(Object bean, String name, Object value) {
        throw new UnsupportedOperationException("credisson test build: no jodd");
    }
}
