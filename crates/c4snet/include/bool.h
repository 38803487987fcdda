/*
 * bool.h -- the boolean header of the original S-Net C toolchain, which box
 * code written for it includes (`#include <bool.h>`; docs/c-interface.md).
 * `snet build` writes it next to C4SNet.h.
 *
 * Before C23: `bool` is `int`, `true` 1 and `false` 0 -- unless <stdbool.h>
 * came first, in which case its `bool` (`_Bool`) is kept. Including
 * <stdbool.h> after this header is fine too: its `bool` macro then takes
 * over, and its `true`/`false` are the same `1`/`0`. From C23 on, `bool`,
 * `true` and `false` are keywords, so this header only includes
 * <stdbool.h>. C++ has them built in. Checked by crates/c4snet/tests/bool_header.rs.
 */
#ifndef SNET_BOOL_H
#define SNET_BOOL_H

#if defined(__cplusplus)
/* bool, true and false are part of C++. */
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ > 201710L
#include <stdbool.h>
#elif !defined(__bool_true_false_are_defined) && !defined(bool)
typedef int bool;
#ifndef true
#define true 1
#endif
#ifndef false
#define false 0
#endif
#endif

#endif /* SNET_BOOL_H */
