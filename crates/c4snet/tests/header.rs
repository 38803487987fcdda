//! Checks the hand-written `include/C4SNet.h` against the Rust side: a C file
//! generated here from the Rust definitions (the `CType` values, the extern
//! signatures, the `SnetArg` layout) must compile against the header, with
//! static assertions on every enum value and every function type.

use std::fmt::Write as _;
use std::process::Command;

use c4snet::CType;

/// The exported functions as the Rust side defines them (crate `abi`,
/// `csrc/out.c`), written as C function types over the header's names.
const SIGNATURES: [(&str, &str); 12] = [
    (
        "C4SNetAlloc",
        "c4snet_data_t *(c4snet_type_t, size_t, void **)",
    ),
    (
        "C4SNetCreate",
        "c4snet_data_t *(c4snet_type_t, size_t, const void *)",
    ),
    ("C4SNetFree", "void (c4snet_data_t *)"),
    ("C4SNetShallowCopy", "c4snet_data_t *(c4snet_data_t *)"),
    ("C4SNetDeepCopy", "c4snet_data_t *(c4snet_data_t *)"),
    ("C4SNetSizeof", "int (c4snet_data_t *)"),
    ("C4SNetArraySize", "size_t (c4snet_data_t *)"),
    ("C4SNetGetData", "void *(c4snet_data_t *)"),
    ("C4SNetGetType", "c4snet_type_t (c4snet_data_t *)"),
    ("C4SNetGetString", "char *(c4snet_data_t *)"),
    ("C4SNetOut", "void (void *, int, ...)"),
    (
        "C4SNetOutValues",
        "void (void *, int, const unsigned long long *, int)",
    ),
];

fn c_enum_name(t: CType) -> &'static str {
    match t {
        CType::UChar => "CTYPE_uchar",
        CType::Char => "CTYPE_char",
        CType::UShort => "CTYPE_ushort",
        CType::Short => "CTYPE_short",
        CType::UInt => "CTYPE_uint",
        CType::Int => "CTYPE_int",
        CType::ULong => "CTYPE_ulong",
        CType::Long => "CTYPE_long",
        CType::Float => "CTYPE_float",
        CType::Double => "CTYPE_double",
        CType::LDouble => "CTYPE_ldouble",
        CType::Pointer => "CTYPE_pointer",
    }
}

fn c_type_of(t: CType) -> &'static str {
    match t {
        CType::UChar => "unsigned char",
        CType::Char => "char",
        CType::UShort => "unsigned short",
        CType::Short => "short",
        CType::UInt => "unsigned int",
        CType::Int => "int",
        CType::ULong => "unsigned long",
        CType::Long => "long",
        CType::Float => "float",
        CType::Double => "double",
        CType::LDouble => "long double",
        CType::Pointer => "void *",
    }
}

#[test]
fn header_matches_rust_side() {
    let mut c = String::from("#include \"C4SNet.h\"\n");
    for t in CType::ALL {
        let _ = writeln!(
            c,
            "_Static_assert({} == {}, \"enum value of {}\");",
            c_enum_name(t),
            t as i32,
            c_enum_name(t)
        );
        let _ = writeln!(
            c,
            "_Static_assert(sizeof({}) == {}, \"element size of {}\");",
            c_type_of(t),
            t.size(),
            c_enum_name(t)
        );
    }
    let _ = writeln!(
        c,
        "_Static_assert(sizeof(c4snet_type_t) == sizeof(int), \"enum passed as int\");"
    );
    for (name, ty) in SIGNATURES {
        let _ = writeln!(c, "_Static_assert(__builtin_types_compatible_p(__typeof__({name}), {ty}), \"type of {name}\");");
    }
    let _ = writeln!(
        c,
        "typedef union {{ c4snet_data_t *field; int tag; }} snet_arg_t;\n_Static_assert(sizeof(snet_arg_t) == {}, \"snet_arg_t\");",
        std::mem::size_of::<c4snet::SnetArg>()
    );
    let dir = std::env::temp_dir().join(format!("c4snet-header-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("check.c");
    std::fs::write(&file, &c).unwrap();
    let include = concat!(env!("CARGO_MANIFEST_DIR"), "/include");
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args([
            "-std=c11",
            "-Wall",
            "-Werror",
            "-fsyntax-only",
            "-I",
            include,
        ])
        .arg(&file)
        .output()
        .expect("a C compiler (cc) is needed for this test");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "header check failed:\n{}\n{c}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn embedded_header_is_the_checked_in_one() {
    assert_eq!(c4snet::HEADER, include_str!("../include/C4SNet.h"));
}
