/* SPDX-License-Identifier: MIT */
package jodd.bean;

/**
 * credisson test build: a compile-only stand-in for jodd's BeanUtil (see
 * BeanCopy).
 */
public interface BeanUtil {
    BeanUtil pojo = new BeanUtilBean();

    void setSimpleProperty(Object bean, String name, Object value);
}
