//! The C ABI of `C4SNet.h` (every function but the variadic `C4SNetOut`,
//! which is in `csrc/out.c`).
//!
//! A `c4snet_data_t *` is `Arc::into_raw(Arc<C4Data>)`; see the crate
//! docs. A field a box allocates or copies records the box's name (for the
//! message that says why it cannot leave the node). Functions given a null field
//! pointer return a neutral value (0, null) rather than crash, except where
//! the header leaves no sensible value.

use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use crate::data::{C4Data, CData, CType};

/// The C type behind `c4snet_data_t`.
pub type CField = c_void;

/// Turns a new field value made by the running box (if any) into a C reference.
pub fn into_c(d: CData) -> *mut CField {
    into_c_value(C4Data::made_by(d, crate::invoke::running_box()))
}

/// Turns a value into a C reference.
pub fn into_c_value(v: C4Data) -> *mut CField {
    Arc::into_raw(Arc::new(v)) as *mut CField
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
    // `Arc<C4Data>` and a reference is still held.
    let v = unsafe { &*(p as *const C4Data) };
    Some(v.data())
}

fn ctype(t: c_int, who: &str) -> Option<CType> {
    let t = CType::from_raw(t);
    if t.is_none() {
        crate::invoke::report_misuse(format!("{who}: invalid c4snet_type_t value"));
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
    let d = if !data.is_null() && size > 0 {
        // SAFETY: the caller provides size*sizeof(t) readable bytes at `data`.
        let src = unsafe { std::slice::from_raw_parts(data as *const u8, size * t.size()) };
        // One write of the bytes (no zeroing first).
        CData::from_bytes(t, size, src)
    } else {
        CData::zeroed(t, size)
    };
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
        unsafe { Arc::decrement_strong_count(p as *const C4Data) };
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
        unsafe { Arc::increment_strong_count(p as *const C4Data) };
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
                    Arc::increment_strong_count(f as *const C4Data);
                    Arc::from_raw(f as *const C4Data)
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

    #[test]
    fn a_field_and_its_c_reference_are_one_allocation() {
        let f = crate::data_field(CData::from_bytes(CType::Int, 1, &7i32.to_ne_bytes()));
        let arc = f.get().expect("local").clone();
        let c = Arc::into_raw(arc.into_any().downcast::<C4Data>().expect("C4SNet data"));
        let p = c as *mut CField;
        // SAFETY: `p` is a live reference made just above, freed once.
        unsafe {
            assert_eq!(
                C4SNetGetData(p) as *const u8,
                crate::data_of(&f).unwrap().as_ptr()
            );
            assert_eq!(*(C4SNetGetData(p) as *const i32), 7);
            C4SNetFree(p);
        }
        assert!(crate::data_of(&f).is_some());
        let v = f.get().expect("local").clone();
        assert_eq!(Arc::strong_count(&v), 2, "the field's and this one");
        assert!(
            C4Data::made_by(CData::zeroed(CType::Int, 1), None)
                .maker()
                .is_none(),
            "made outside a box"
        );
    }
}
