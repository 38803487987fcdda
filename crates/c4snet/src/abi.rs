//! The C ABI of `C4SNet.h` (every function but the variadic `C4SNetOut`,
//! which is in `csrc/out.c`).
//!
//! A `c4snet_data_t *` is `Arc::into_raw(Arc<FieldValue>)` holding
//! `FieldValue::Data`; see the crate docs. Functions given a null field
//! pointer return a neutral value (0, null) rather than crash, except where
//! the header leaves no sensible value.

use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use snet_core::{CData, CType, FieldValue};

/// The C type behind `c4snet_data_t`.
pub type CField = c_void;

/// Turns a new field value into a C reference.
pub fn into_c(d: CData) -> *mut CField {
    Arc::into_raw(Arc::new(FieldValue::Data(d))) as *mut CField
}

/// Borrows the data of a C reference.
///
/// # Safety
/// `p` is null or a live reference obtained from this module (or from the
/// runtime's box arguments); the returned borrow must not outlive it.
pub unsafe fn data<'a>(p: *mut CField) -> Option<&'a CData> {
    if p.is_null() {
        return None;
    }
    // SAFETY: by the contract, `p` came from `Arc::into_raw` of an
    // `Arc<FieldValue>` and a reference is still held.
    let v = unsafe { &*(p as *const FieldValue) };
    match v {
        FieldValue::Data(d) => Some(d),
        FieldValue::Text { .. } => None,
    }
}

fn ctype(t: c_int, who: &str) -> Option<CType> {
    let t = CType::from_raw(t);
    if t.is_none() {
        crate::invoke::report_misuse(&format!("{who}: invalid c4snet_type_t value"));
    }
    t
}

/// `C4SNetAlloc`: a new zero-filled field of `size` elements.
///
/// # Safety
/// `data` is null or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn C4SNetAlloc(t: c_int, size: usize, data: *mut *mut c_void) -> *mut CField {
    let Some(t) = ctype(t, "C4SNetAlloc") else {
        return std::ptr::null_mut();
    };
    let d = CData::zeroed(t, size);
    let buf = d.as_ptr() as *mut c_void;
    if !data.is_null() {
        // SAFETY: `data` is valid for one pointer write (contract).
        unsafe { *data = buf };
    }
    into_c(d)
}

/// `C4SNetCreate`: a new field holding a copy of `size` elements at `data`.
///
/// # Safety
/// `data` points to `size` readable elements of type `t` (or `size` is 0).
#[no_mangle]
pub unsafe extern "C" fn C4SNetCreate(t: c_int, size: usize, data: *const c_void) -> *mut CField {
    let Some(t) = ctype(t, "C4SNetCreate") else {
        return std::ptr::null_mut();
    };
    let mut d = CData::zeroed(t, size);
    if !data.is_null() && size > 0 {
        // SAFETY: the caller provides size*sizeof(t) readable bytes at `data`.
        let src = unsafe { std::slice::from_raw_parts(data as *const u8, size * t.size()) };
        d.bytes_mut().copy_from_slice(src);
    }
    into_c(d)
}

/// `C4SNetFree`: drops one reference (null is ignored).
///
/// # Safety
/// `p` is null or a reference the caller owns; it must not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn C4SNetFree(p: *mut CField) {
    if !p.is_null() {
        // SAFETY: `p` is an owned reference from `Arc::into_raw` (contract).
        unsafe { Arc::decrement_strong_count(p as *const FieldValue) };
    }
}

/// `C4SNetShallowCopy`: adds one reference and returns the same pointer.
///
/// # Safety
/// `p` is null or a live reference.
#[no_mangle]
pub unsafe extern "C" fn C4SNetShallowCopy(p: *mut CField) -> *mut CField {
    if !p.is_null() {
        // SAFETY: `p` is a live reference from `Arc::into_raw` (contract).
        unsafe { Arc::increment_strong_count(p as *const FieldValue) };
    }
    p
}

/// `C4SNetDeepCopy`: an independent copy (a new field with one reference).
///
/// # Safety
/// `p` is null or a live reference.
#[no_mangle]
pub unsafe extern "C" fn C4SNetDeepCopy(p: *mut CField) -> *mut CField {
    // SAFETY: forwarded contract.
    match unsafe { data(p) } {
        Some(d) => into_c(d.clone()),
        None => std::ptr::null_mut(),
    }
}

/// `C4SNetSizeof`: bytes per element.
///
/// # Safety
/// `p` is null or a live reference.
#[no_mangle]
pub unsafe extern "C" fn C4SNetSizeof(p: *mut CField) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { data(p) }.map_or(0, |d| d.ctype().size() as c_int)
}

/// `C4SNetArraySize`: the number of elements.
///
/// # Safety
/// `p` is null or a live reference.
#[no_mangle]
pub unsafe extern "C" fn C4SNetArraySize(p: *mut CField) -> usize {
    // SAFETY: forwarded contract.
    unsafe { data(p) }.map_or(0, |d| d.len())
}

/// `C4SNetGetData`: the elements (writable only while the caller holds the
/// only reference, e.g. between allocation and `C4SNetOut`).
///
/// # Safety
/// `p` is null or a live reference; the pointer is valid while it is.
#[no_mangle]
pub unsafe extern "C" fn C4SNetGetData(p: *mut CField) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { data(p) }.map_or(std::ptr::null_mut(), |d| d.as_ptr() as *mut c_void)
}

/// `C4SNetGetType`: the element type (`CTYPE_int`, ...); -1 for null.
///
/// # Safety
/// `p` is null or a live reference.
#[no_mangle]
pub unsafe extern "C" fn C4SNetGetType(p: *mut CField) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { data(p) }.map_or(-1, |d| d.ctype() as c_int)
}

/// `C4SNetGetString`: a `malloc`'d, NUL-terminated copy of the field's bytes
/// (meant for char arrays); the caller `free`s it.
///
/// # Safety
/// `p` is null or a live reference.
#[no_mangle]
pub unsafe extern "C" fn C4SNetGetString(p: *mut CField) -> *mut c_char {
    // SAFETY: forwarded contract.
    let Some(d) = (unsafe { data(p) }) else {
        return std::ptr::null_mut();
    };
    let bytes = d.bytes();
    // SAFETY: plain allocation of len+1 bytes; checked for null below.
    let s = unsafe { libc::malloc(bytes.len() + 1) } as *mut u8;
    if s.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `s` has room for len+1 bytes; the source is a distinct allocation.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), s, bytes.len());
        *s.add(bytes.len()) = 0;
    }
    s as *mut c_char
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refcounts_and_copies() {
        let v: [i32; 3] = [1, 2, 3];
        // SAFETY: `v` holds 3 ints; every pointer used below is live.
        unsafe {
            let f = C4SNetCreate(CType::Int as c_int, 3, v.as_ptr() as *const c_void);
            assert_eq!(C4SNetArraySize(f), 3);
            assert_eq!(C4SNetSizeof(f), 4);
            assert_eq!(C4SNetGetType(f), CType::Int as c_int);
            let g = C4SNetShallowCopy(f);
            assert_eq!(g, f);
            assert_eq!(
                Arc::strong_count(&{
                    Arc::increment_strong_count(f as *const FieldValue);
                    Arc::from_raw(f as *const FieldValue)
                }),
                3
            );
            let h = C4SNetDeepCopy(f);
            assert_ne!(h, f);
            assert_eq!(*(C4SNetGetData(h) as *const i32).add(2), 3);
            C4SNetFree(f);
            C4SNetFree(g);
            C4SNetFree(h);
            let mut buf: *mut c_void = std::ptr::null_mut();
            let s = C4SNetAlloc(CType::Char as c_int, 2, &mut buf);
            *(buf as *mut u8) = b'h';
            *(buf as *mut u8).add(1) = b'i';
            let cs = C4SNetGetString(s);
            assert_eq!(std::ffi::CStr::from_ptr(cs).to_str().unwrap(), "hi");
            libc::free(cs as *mut c_void);
            C4SNetFree(s);
        }
    }
}
