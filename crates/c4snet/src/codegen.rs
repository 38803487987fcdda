//! C source for a program's boxes: the one writer of every C text that
//! names a box function.
//!
//! - the box function's parameter list ([`parameters`]), from which every
//!   prototype is made: the declaration a trampoline calls through
//!   ([`trampoline_source`]), the one shown to users ([`expected_prototype`]),
//!   the header that checks box sources against the program
//!   ([`prototypes_header`]) and the head of a function defined from an
//!   inline body ([`parameters`] with [`Naming::Labels`]);
//! - the trampolines that call box functions from Rust
//!   ([`trampoline_source`], [`trampoline_source_cxx`],
//!   [`trampoline_source_extra`]) and the argument union they read
//!   ([`ARG_UNION`], [`crate::SnetArg`] on the Rust side);
//! - the identifiers generated code reserves ([`GENERATED_PREFIX`]) and the
//!   box names and input labels C cannot take ([`box_name_problem`],
//!   [`inline_params_problem`]).
//!
//! `snet build` (crate `snet-cli`) assembles the generated files from
//! these parts.

use std::fmt::Write as _;

use snet_core::BoxDef;

/// The prefix of every identifier that generated C code defines (the
/// trampolines, their parameters, the box table, `snet build`'s program
/// array): C reserves names starting with two underscores for the
/// implementation, so no box function of a valid program can be named
/// like one, and `snet build` refuses box names with this prefix.
pub const GENERATED_PREFIX: &str = "__snet_";

/// C's keywords (C89 to C23) and the names the generated box function
/// reserves: an input label cannot be a parameter named like one of them.
pub const C_RESERVED: [&str; 55] = [
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "_Alignas",
    "_Alignof",
    "_Atomic",
    "_Bool",
    "_Complex",
    "_Generic",
    "_Imaginary",
    "_Noreturn",
    "_Static_assert",
    "_Thread_local",
    "alignas",
    "alignof",
    "bool",
    "constexpr",
    "false",
    "nullptr",
    "static_assert",
    "thread_local",
    "true",
    "typeof",
    "hnd",
];

/// C++'s keywords beyond C's (a box called from a C++ trampoline cannot be
/// named like one).
const CXX_KEYWORDS: [&str; 38] = [
    "and",
    "and_eq",
    "asm",
    "bitand",
    "bitor",
    "catch",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "compl",
    "concept",
    "consteval",
    "constinit",
    "const_cast",
    "decltype",
    "delete",
    "dynamic_cast",
    "explicit",
    "export",
    "friend",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "requires",
    "reinterpret_cast",
];

/// More C++ keywords (split to keep the arrays short).
const CXX_KEYWORDS_2: [&str; 10] = [
    "static_cast",
    "template",
    "this",
    "throw",
    "try",
    "typeid",
    "typename",
    "using",
    "virtual",
    "wchar_t",
];

/// Why box `name` cannot be the name of its C function, if it cannot:
/// `main` (the generated program's entry point), a C keyword (a C++ one
/// too if `cxx`), an identifier `C4SNet.h` declares, a function of the
/// runtime library, or a name with the prefix of generated code
/// ([`GENERATED_PREFIX`]). Every other valid C identifier is
/// accepted: generated code uses none.
pub fn box_name_problem(name: &str, cxx: bool) -> Option<String> {
    if name == "main" {
        return Some(
            "`main` is the C program's entry point, which `snet build` generates: rename the box"
                .to_string(),
        );
    }
    if name != "hnd" && C_RESERVED.contains(&name) {
        return Some(format!("`{name}` is a C keyword: rename the box"));
    }
    if cxx && (CXX_KEYWORDS.contains(&name) || CXX_KEYWORDS_2.contains(&name)) {
        return Some(format!(
            "`{name}` is a C++ keyword (the program has C++ sources): rename the box"
        ));
    }
    if name.starts_with(GENERATED_PREFIX) {
        return Some(format!(
            "names starting with `{}` are reserved for the code `snet build` generates: rename the box",
            GENERATED_PREFIX
        ));
    }
    if header_identifiers().any(|w| w == name) {
        return Some(format!(
            "`{name}` is declared by the C4SNet interface (C4SNet.h): rename the box"
        ));
    }
    if name == "snet_runner_main"
        || name.starts_with("snet_c4snet_")
        || name.starts_with("snet_mpi_")
        || name.starts_with("c4snet_")
    {
        return Some(format!(
            "`{name}` is a name of snet's runtime library (`snet_runner_main`, `snet_c4snet_*`, `snet_mpi_*` and `c4snet_*` are reserved): rename the box"
        ));
    }
    None
}

/// The identifiers `C4SNet.h` declares (its functions, types, constants
/// and macros: every word starting with `C4SNet`, `c4snet_`, `CTYPE_` or
/// `C4SNET_`).
fn header_identifiers() -> impl Iterator<Item = &'static str> {
    crate::HEADER
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| {
            (w.starts_with("C4SNet") && w.len() > "C4SNet".len())
                || w.starts_with("c4snet_")
                || w.starts_with("CTYPE_")
                || w.starts_with("C4SNET_")
        })
}

/// Why box `b`'s inline C body cannot become a C function, if it cannot:
/// its input labels name the parameters, so they must be distinct and not
/// C keywords (nor `hnd`, the handle).
pub fn inline_params_problem(b: &BoxDef) -> Option<String> {
    for (i, l) in b.inputs.iter().enumerate() {
        let name = l.name();
        if C_RESERVED.contains(&name) {
            let what = if name == "hnd" {
                "the handle's name"
            } else {
                "a C keyword"
            };
            return Some(format!(
                "input label `{l}` of box `{}` would be a C parameter named `{name}`, which is {what}",
                b.name
            ));
        }
        if let Some(prev) = b.inputs[..i].iter().find(|p| p.name() == name) {
            return Some(format!(
                "input labels `{prev}` and `{l}` of box `{}` would both be C parameters named `{name}`",
                b.name
            ));
        }
    }
    None
}

/// `s` as a C string literal (`"` and `\` escaped, bytes outside
/// printable ASCII as octal escapes): paths in `#line` and `#include`.
pub fn c_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for b in s.bytes() {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
    out.push('"');
    out
}

/// How [`parameters`] writes a box function's parameters.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Naming {
    /// Types only, a field as `c4snet_data_t *` (messages to users).
    Unnamed,
    /// Types only, a field as `struct cdata *` (the definition of
    /// `c4snet_data_t` in `C4SNet.h`): for generated code that declares
    /// box functions without including that header.
    Struct,
    /// Named: the handle `hnd`, each input after its label (the function
    /// defined from an inline body; needs [`inline_params_problem`] to
    /// find nothing).
    Labels,
}

/// The parameter declarations of box `def`'s C function, in order: the
/// handle (`void *`), then one per input label in signature order,
/// `c4snet_data_t *` for a field and `int` for a tag or binding tag.
pub fn parameter_list(def: &BoxDef, naming: Naming) -> impl Iterator<Item = String> + '_ {
    let handle = if naming == Naming::Labels {
        "void *hnd"
    } else {
        "void *"
    };
    let field = if naming == Naming::Struct {
        "struct cdata *"
    } else {
        "c4snet_data_t *"
    };
    std::iter::once(handle.to_string()).chain(def.inputs.iter().map(move |l| {
        let ty = if l.is_field() { field } else { "int" };
        if naming == Naming::Labels {
            format!("{ty}{}{}", if l.is_field() { "" } else { " " }, l.name())
        } else {
            ty.to_string()
        }
    }))
}

/// Box `def`'s C function's parameters, as a prototype writes them
/// (`void *, c4snet_data_t *, int`; see [`parameter_list`]).
pub fn parameters(def: &BoxDef, naming: Naming) -> String {
    parameter_list(def, naming).collect::<Vec<_>>().join(", ")
}

/// The C prototype box `def`'s function must have, as shown to the user:
/// `void *NAME(void *hnd, c4snet_data_t *FIELD, int TAG, ...);` with the
/// parameters named after the input labels (unnamed where a label cannot
/// be a C parameter name).
pub fn expected_prototype(def: &BoxDef) -> String {
    let naming = if inline_params_problem(def).is_none() {
        Naming::Labels
    } else {
        Naming::Unnamed
    };
    format!("void *{}({});", def.name, parameters(def, naming))
}

/// The header every box source is compiled with (`-include`): the
/// prototype of each box in `boxes` whose function the sources define
/// (boxes with an inline body get theirs from the generated definition),
/// but those `skip` names, so that the C compiler rejects a definition of
/// another type ("conflicting types"). A `#line` directive puts each
/// prototype's name at the box's name in the program (`source`), which is
/// where the compiler's "previous declaration" note then points.
/// `c4snet_data_t` is written as `struct cdata` (its definition in
/// `C4SNet.h`) so that the header declares nothing but the box functions
/// and works beside any copy of `C4SNet.h`.
pub fn prototypes_header(boxes: &[&BoxDef], source: &str, skip: impl Fn(&str) -> bool) -> String {
    let mut h = String::new();
    h.push_str("/* Generated by `snet build`: the C type of each box function, checked\n");
    h.push_str("   against its definition in the box sources (compiled with -include). */\n");
    h.push_str("struct cdata;\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
    for b in boxes.iter().filter(|b| b.code.is_none() && !skip(&b.name)) {
        let (line, pad) = name_position(b, source);
        let _ = writeln!(
            h,
            "void *\n#line {line} {}\n{pad}{}({});",
            c_quote(&b.loc.file),
            b.name,
            parameters(b, Naming::Struct)
        );
    }
    h.push_str("#ifdef __cplusplus\n}\n#endif\n");
    h
}

/// The line of box `b`'s name in the program and the text before it on that
/// line blanked (tabs kept, so that the C compiler counts columns alike).
/// Falls back to the `box` keyword's place if the name is not on its line.
fn name_position(b: &BoxDef, source: &str) -> (u32, String) {
    let line = b.loc.line.max(1);
    let text = source.split('\n').nth(line as usize - 1).unwrap_or("");
    let kw = text
        .char_indices()
        .nth(b.loc.col.saturating_sub(1) as usize)
        .map_or(text.len(), |(i, _)| i);
    let at = text[kw..]
        .strip_prefix("box")
        .map(|rest| rest.trim_start())
        .filter(|rest| rest.starts_with(b.name.as_str()))
        .map_or(kw, |rest| text.len() - rest.len());
    let pad = text[..at]
        .chars()
        .map(|ch| if ch == '\t' { '\t' } else { ' ' })
        .collect();
    (line, pad)
}

/// The C definition of the union a trampoline reads its arguments from
/// (`__snet_arg_t`; [`crate::SnetArg`] on the Rust side), for generated
/// code that includes no header.
pub const ARG_UNION: &str = "typedef union { struct cdata *field; int tag; } __snet_arg_t;\n";

/// The C prototype of `def`'s box function with unnamed parameters, a
/// field as `struct cdata *` (which is `c4snet_data_t *`).
fn prototype(def: &BoxDef) -> String {
    format!("void *{}({});\n", def.name, parameters(def, Naming::Struct))
}

/// The arguments of the call of `def`'s box function in a trampoline:
/// the handle, then one per input label, then `extra` zeros (a box
/// function with parameters beyond its signature: `0` converts to any
/// scalar type, so each receives 0, NULL or 0.0).
fn call_args(def: &BoxDef, extra: usize) -> String {
    let mut args = String::from("__snet_h");
    for (i, l) in def.inputs.iter().enumerate() {
        args.push_str(&format!(
            ", __snet_a[{i}].{}",
            if l.is_field() { "field" } else { "tag" }
        ));
    }
    for _ in 0..extra {
        args.push_str(", 0");
    }
    args
}

/// The C++ source of a trampoline for `def`, for programs with C++ box
/// code: as [`trampoline_source`], but the call is in a `try` block, and an
/// exception that escapes the box is reported through
/// [`crate::invoke::snet_c4snet_box_threw`] (with `what()` for a `std::exception`) instead
/// of reaching the C and Rust frames below, where it would end the process
/// through `std::terminate` without naming the box. Needs `<exception>`,
/// the `__snet_arg_t` typedef and a C-linkage declaration of
/// `snet_c4snet_box_threw` before it; the generated code puts it in an
/// `extern "C"` block.
pub fn trampoline_source_cxx(def: &BoxDef) -> String {
    format!(
        "{}static void __snet_call_{1}(void *__snet_h, const __snet_arg_t *__snet_a)\n{{\n    try {{\n        (void){1}({2});\n    }} catch (const std::exception &__snet_e) {{\n        snet_c4snet_box_threw(__snet_h, __snet_e.what());\n    }} catch (...) {{\n        snet_c4snet_box_threw(__snet_h, 0);\n    }}\n}}\n",
        prototype(def),
        def.name,
        call_args(def, 0)
    )
}

/// The C source of a trampoline for `def`: `static void
/// __snet_call_NAME(void *__snet_h, const __snet_arg_t *__snet_a)` plus the
/// box's prototype. Needs the `__snet_arg_t` typedef before it.
pub fn trampoline_source(def: &BoxDef) -> String {
    format!(
        "{}static void __snet_call_{1}(void *__snet_h, const __snet_arg_t *__snet_a)\n{{\n    (void){1}({2});\n}}\n",
        prototype(def),
        def.name,
        call_args(def, 0)
    )
}

/// The C source of an external trampoline for `def`'s box function with
/// `extra` parameters beyond its signature, which receive 0: compiled in
/// the translation unit of the box source that defines the function (after
/// it, so that its own type, extra parameters included, is the one called).
/// Needs nothing before it but that definition.
pub fn trampoline_source_extra(def: &BoxDef, extra: usize) -> String {
    format!(
        "typedef union {{ struct cdata *field; int tag; }} __snet_arg_{0}_t;\nvoid __snet_call_{0}(void *__snet_h, const __snet_arg_{0}_t *__snet_a);\nvoid __snet_call_{0}(void *__snet_h, const __snet_arg_{0}_t *__snet_a)\n{{\n    (void){0}({1});\n}}\n",
        def.name,
        call_args(def, extra)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_names_generated_code_or_c_needs_are_refused() {
        for (name, why) in [
            ("main", "entry point"),
            ("int", "C keyword"),
            ("__snet_call_f", "reserved for the code"),
            ("C4SNetOut", "C4SNet.h"),
            ("C4SNetOutValues", "C4SNet.h"),
            ("C4SNET_OUT_1", "C4SNet.h"),
            ("C4SNET_NO_OUT_MACRO", "C4SNet.h"),
            ("c4snet_data_t", "C4SNet.h"),
            ("CTYPE_int", "C4SNet.h"),
            ("snet_runner_main", "runtime library"),
            ("snet_c4snet_out_begin", "runtime library"),
        ] {
            let p = box_name_problem(name, false).unwrap_or_default();
            assert!(p.contains(why), "{name}: {p:?}");
        }
        assert!(box_name_problem("class", true).is_some());
        for ok in [
            "a",
            "hnd",
            "e",
            "h",
            "argc",
            "argv",
            "call",
            "name",
            "snet_arg_t",
            "snet_call_a",
            "snet_boxes",
            "snet_program",
            "snet_program_name",
            "snet_box_entry",
            "class",
            "C4SNet",
            "ident",
        ] {
            assert_eq!(box_name_problem(ok, false), None, "{ok}");
        }
    }

    #[test]
    fn paths_are_quoted_for_c() {
        assert_eq!(c_quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\012\"");
    }
}
