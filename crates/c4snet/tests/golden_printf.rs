//! Golden test: our number formatting against a C program's `printf`.
//!
//! Builds a C program with `gcc` at test time that prints a few thousand
//! float, double and long double bit patterns (special values, edge cases
//! and pseudo-random patterns) with the formats `records.md` prescribes, and
//! requires byte-identical output from `c4snet::text::format_textual`; and
//! a second that reads values written in free forms (`(double)0.5`,
//! `(int)007`, random shortest-form doubles) through `RecordReader` and
//! `RecordWriter` with the C4SNet text codec and requires what C prints after `strto*` of the same text.
//! Skipped, with a message, when `gcc` is not installed.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

use c4snet::text as ctext;
use c4snet::{CData, CType};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn floats(rng: &mut Rng) -> Vec<u32> {
    let mut v: Vec<u32> = [
        0.0f32,
        -0.0,
        1.0,
        1.5,
        0.1,
        -3.25,
        f32::MAX,
        f32::MIN_POSITIVE,
        1e-45,
        1e-20,
        123456.79,
        f32::INFINITY,
    ]
    .iter()
    .map(|f| f.to_bits())
    .collect();
    v.extend([0x7fc0_0000, 0xffc0_0000, 0x0000_0001, 0x007f_ffff]);
    v.extend((0..1500).map(|_| rng.next() as u32));
    v
}

fn doubles(rng: &mut Rng) -> Vec<u64> {
    let mut v: Vec<u64> = [
        0.0f64,
        -0.0,
        1.0,
        1.5,
        0.1,
        1e300,
        -2.5e-300,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        f64::NEG_INFINITY,
    ]
    .iter()
    .map(|f| f.to_bits())
    .collect();
    // 2^-48 = 3.5527136788005009293556213378906250e-15 has 34 significant
    // digits ending in 5: %.32le must round the tie to even.
    v.push(2f64.powi(-48).to_bits());
    v.push(3f64.mul_add(2f64.powi(-50), 1.0).to_bits());
    v.push(0x7ff8_0000_0000_0000);
    v.extend((0..1500).map(|_| rng.next()));
    v
}

/// 16-byte long double slots: the 10 x87 bytes, then zero padding.
fn ldoubles(rng: &mut Rng) -> Vec<[u8; 16]> {
    let mut v = Vec::new();
    for text in [
        "0",
        "-0",
        "1",
        "1.5",
        "0.1",
        "1e4000",
        "-1e-4000",
        "3.6e-4951",
        "inf",
        "nan",
    ] {
        let d = ctext::parse_textual(&format!("(long double){text}")).expect("valid long double");
        v.push(d.bytes().try_into().expect("16-byte slot"));
    }
    for _ in 0..1500 {
        let mut slot = [0u8; 16];
        slot[..8].copy_from_slice(&(rng.next() | 1 << 63).to_le_bytes()); // explicit integer bit: a normal number
        let mut sign_exp = rng.next() as u16;
        if sign_exp & 0x7fff == 0 {
            sign_exp |= 1; // exponent 0 with the integer bit set is a pseudo-denormal
        }
        slot[8..10].copy_from_slice(&sign_exp.to_le_bytes());
        v.push(slot);
    }
    v
}

fn ours(ctype: CType, bytes: &[u8]) -> String {
    let d = CData::from_bytes(ctype, 1, bytes);
    let mut out = Vec::new();
    ctext::format_textual(&d, &mut out);
    let s = String::from_utf8(out).expect("ASCII number");
    s[s.find(')').expect("header") + 1..].to_owned()
}

/// A fresh directory per test (the tests run in parallel and clean up after themselves).
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("snet-io-golden-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn number_formatting_matches_c_printf() {
    if Command::new("gcc").arg("--version").output().is_err() {
        eprintln!(
            "SKIPPED: gcc not found; float/double/long double formatting not checked against C"
        );
        return;
    }
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        eprintln!("SKIPPED: the long double patterns assume x86_64 Linux");
        return;
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (fs, ds, ls) = (floats(&mut rng), doubles(&mut rng), ldoubles(&mut rng));
    let ints: Vec<u64> = [0, 1, u64::MAX, 1 << 63, 0x8000, 0x7fff_ffff, 0x8000_0000]
        .into_iter()
        .chain((0..200).map(|_| rng.next()))
        .collect();

    let mut c = String::from("#include <stdio.h>\n#include <string.h>\n");
    let _ = writeln!(
        c,
        "static const unsigned int F[] = {{{}}};",
        fs.iter()
            .map(|x| format!("{x}u"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let _ = writeln!(
        c,
        "static const unsigned long long D[] = {{{}}};",
        ds.iter()
            .map(|x| format!("{x}ull"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let _ = writeln!(
        c,
        "static const unsigned long long I[] = {{{}}};",
        ints.iter()
            .map(|x| format!("{x}ull"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let rows: Vec<String> = ls
        .iter()
        .map(|s| {
            format!(
                "{{{}}}",
                s.iter()
                    .map(|b| b.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            )
        })
        .collect();
    let _ = writeln!(
        c,
        "static const unsigned char L[][16] = {{{}}};",
        rows.join(",")
    );
    c.push_str(
        r#"
#define N(a) (sizeof a / sizeof a[0])
int main(void) {
    for (size_t i = 0; i < N(F); i++) { float f; memcpy(&f, &F[i], 4); printf("%.32f\n", f); }
    for (size_t i = 0; i < N(D); i++) { double d; memcpy(&d, &D[i], 8); printf("%.32le\n", d); }
    for (size_t i = 0; i < N(L); i++) { long double l; memcpy(&l, L[i], 16); printf("%.32Le\n", l); }
    for (size_t i = 0; i < N(I); i++) {
        unsigned long long x = I[i];
        printf("%hd %hu %d %u %ld %lu\n", (short)x, (unsigned short)x, (int)x, (unsigned)x, (long)x, (unsigned long)x);
    }
    return 0;
}
"#,
    );
    let dir = temp_dir("printf");
    let (src, exe) = (dir.join("golden.c"), dir.join("golden"));
    std::fs::write(&src, c).expect("write C source");
    let status = Command::new("gcc")
        .arg("-O1")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("run gcc");
    assert!(status.success(), "gcc failed on {}", src.display());
    let out = Command::new(&exe).output().expect("run the golden program");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("ASCII output");
    let mut lines = text.lines();
    let mut checked = 0;
    let mut expect = |what: &str, got: String| {
        let want = lines.next().expect("one C line per value");
        assert_eq!(got, want, "{what}");
        checked += 1;
    };
    for x in &fs {
        expect(
            &format!("float bits {x:#x}"),
            ours(CType::Float, &x.to_ne_bytes()),
        );
    }
    for x in &ds {
        expect(
            &format!("double bits {x:#x}"),
            ours(CType::Double, &x.to_ne_bytes()),
        );
    }
    for x in &ls {
        expect(&format!("long double bytes {x:?}"), ours(CType::LDouble, x));
    }
    for &x in &ints {
        let row = [
            ours(CType::Short, &(x as i16).to_ne_bytes()),
            ours(CType::UShort, &(x as u16).to_ne_bytes()),
            ours(CType::Int, &(x as i32).to_ne_bytes()),
            ours(CType::UInt, &(x as u32).to_ne_bytes()),
            ours(CType::Long, &(x as i64).to_ne_bytes()),
            ours(CType::ULong, &x.to_ne_bytes()),
        ];
        expect(&format!("integer {x:#x}"), row.join(" "));
    }
    assert!(lines.next().is_none(), "C printed more lines than values");
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("{checked} values formatted exactly as C's printf");
}

#[test]
fn doubles_and_long_doubles_read_back_bit_exact() {
    let mut rng = Rng(42);
    for bits in doubles(&mut rng) {
        let x = f64::from_bits(bits);
        if x.is_nan() {
            continue;
        }
        let text = format!("(double){}", ours(CType::Double, &bits.to_ne_bytes()));
        let back = ctext::parse_textual(&text).expect("valid double");
        assert_eq!(back.bytes(), &bits.to_ne_bytes()[..], "{text}");
    }
    for slot in ldoubles(&mut rng) {
        let text = format!("(long double){}", ours(CType::LDouble, &slot));
        if text.contains("nan") {
            continue;
        }
        let back = ctext::parse_textual(&text).expect("valid long double");
        assert_eq!(back.bytes(), &slot[..], "{text}");
    }
}

/// End to end: C4SNet values in the textual forms people write (`0.5`,
/// `007`, ` 2 `, `1e300`, hex floats, ...) are read and written back in
/// the canonical form — byte for byte what a C program prints after
/// reading the same text with `strto*` (as the original runtime's C4SNet
/// deserialiser does with `sscanf`) and printing it with the `records.md`
/// format.
#[test]
fn values_read_are_written_as_c_prints_them() {
    if Command::new("gcc").arg("--version").output().is_err() {
        eprintln!("SKIPPED: gcc not found; read-then-written values not checked against C");
        return;
    }
    let mut rng = Rng(7);
    // (type, C conversion, C format, texts)
    let mut cases: Vec<(&str, &str, &str, Vec<String>)> = vec![
        (
            "double",
            "strtod(s, 0)",
            "%.32le",
            [
                "0.5", "1", "-0.001", "3.14159", "1e300", " 2.5 ", "+7", "0x1p-2", "-inf",
                "1e-320", "0.1",
            ]
            .map(String::from)
            .to_vec(),
        ),
        (
            "float",
            "strtof(s, 0)",
            "%.32f",
            ["0.5", "0.1", "-3.25", "1024", "1e-3", "16777217"]
                .map(String::from)
                .to_vec(),
        ),
        (
            "long double",
            "strtold(s, 0)",
            "%.32Le",
            ["0.5", "0.1", "1e-4000", "-2.5e100"]
                .map(String::from)
                .to_vec(),
        ),
        (
            "int",
            "(int)strtol(s, 0, 10)",
            "%d",
            ["007", "+3", " -2 ", "2147483647", "-2147483648", "0"]
                .map(String::from)
                .to_vec(),
        ),
        (
            "unsigned int",
            "(unsigned)strtoul(s, 0, 10)",
            "%u",
            ["4294967295", "010"].map(String::from).to_vec(),
        ),
        (
            "short",
            "(short)strtol(s, 0, 10)",
            "%hd",
            ["-32768", "0032767"].map(String::from).to_vec(),
        ),
        (
            "unsigned short",
            "(unsigned short)strtoul(s, 0, 10)",
            "%hu",
            ["65535", " 1"].map(String::from).to_vec(),
        ),
        (
            "long",
            "strtol(s, 0, 10)",
            "%ld",
            ["-9223372036854775808", "+42"].map(String::from).to_vec(),
        ),
        (
            "unsigned long",
            "strtoul(s, 0, 10)",
            "%lu",
            ["18446744073709551615", "00"].map(String::from).to_vec(),
        ),
    ];
    for _ in 0..300 {
        let x = f64::from_bits(rng.next());
        if x.is_finite() {
            cases[0].3.push(format!("{x}"));
            cases[0].3.push(format!("{x:e}"));
        }
        let f = f32::from_bits(rng.next() as u32);
        if f.is_finite() && (f == 0.0 || f.abs() >= 1e-12) {
            cases[1].3.push(format!("{f}"));
        }
    }

    let mut c = String::from(
        "#include <stdio.h>\n#include <stdlib.h>\nint main(void) {\n    const char *s;\n",
    );
    let mut xml = String::new();
    let mut want_header = Vec::new();
    for (ty, conv, fmt, texts) in &cases {
        for t in texts {
            let _ = writeln!(c, "    s = {t:?}; printf(\"{fmt}\\n\", {conv});");
            let _ = writeln!(
                xml,
                "<record type='data'><field label='v'>({ty}){t}</field></record>"
            );
            want_header.push(format!("({ty})"));
        }
    }
    c.push_str("    return 0;\n}\n");

    let dir = temp_dir("read-write");
    let (src, exe) = (dir.join("rw.c"), dir.join("rw"));
    std::fs::write(&src, c).expect("write C source");
    let status = Command::new("gcc")
        .arg("-O1")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("run gcc");
    assert!(status.success(), "gcc failed on {}", src.display());
    let out = Command::new(&exe).output().expect("run the C program");
    assert!(out.status.success());
    let c_lines = String::from_utf8(out.stdout).expect("ASCII output");

    let mut reader = snet_io::RecordReader::new(xml.as_bytes()).with_codecs(c4snet::text_codecs());
    let mut writer = snet_io::RecordWriter::new(Vec::new()).with_codecs(c4snet::text_codecs());
    while let Some(item) = reader.next().expect("valid values") {
        if let snet_io::StreamItem::Data(r) = item {
            writer.write(&r).expect("in-memory write");
        }
    }
    let written =
        String::from_utf8(writer.into_inner().expect("in-memory flush")).expect("UTF-8 output");
    let ours: Vec<&str> = written
        .lines()
        .map(|l| {
            let start = l.find("\">").expect("field value") + 2;
            &l[start..l.find("</field>").expect("field end")]
        })
        .collect();
    let texts: Vec<&String> = cases.iter().flat_map(|c| &c.3).collect();
    assert_eq!(ours.len(), texts.len());
    assert_eq!(c_lines.lines().count(), texts.len());
    for (((got, c_line), header), text) in ours
        .iter()
        .zip(c_lines.lines())
        .zip(&want_header)
        .zip(texts)
    {
        assert_eq!(*got, format!("{header}{c_line}"), "read {header}{text:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
