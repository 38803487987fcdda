//! Source positions for streamed input.
//!
//! The XML parser reports byte offsets; people want lines and columns. A
//! [`LineCounter`] sits between the input and the parser and counts the
//! newlines of every byte the parser consumes, remembering where the last
//! few lines started, so that an offset at or a little before the consumed
//! end maps to a line and column without keeping the input.

use std::fmt;
use std::io::{self, BufRead, Read};

/// A place in the input: byte offset (0-based), line and column (1-based,
/// the column counted in bytes).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Position {
    /// Byte offset from the start of the input (0-based).
    pub offset: u64,
    /// Line (1-based).
    pub line: u64,
    /// Column in bytes (1-based).
    pub column: u64,
}

impl fmt::Display for Position {
    /// `LINE:COL`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// How many recent line starts a [`LineCounter`] remembers. The parser looks
/// back at most one event, and events rarely span many lines; an offset
/// further back is reported at the oldest remembered line, column 1.
const RING: usize = 64;

/// A `BufRead` adapter that counts the lines of what is consumed.
pub struct LineCounter<R> {
    inner: R,
    consumed: u64,
    /// Newlines consumed so far.
    lines: u64,
    /// Offsets of the most recent newline bytes; `ring[(lines - 1) % RING]` is the latest.
    ring: [u64; RING],
    /// Bytes of the inner reader's buffer not yet consumed, as of the last
    /// `fill_buf` (0 when unknown): while non-zero, `fill_buf` does no I/O.
    avail: usize,
}

impl<R: BufRead> LineCounter<R> {
    /// Counts the lines of `inner`.
    pub fn new(inner: R) -> LineCounter<R> {
        LineCounter {
            inner,
            consumed: 0,
            lines: 0,
            ring: [0; RING],
            avail: 0,
        }
    }

    /// Whether input is buffered: the next `fill_buf` returns it without
    /// reading (and so without waiting for the input's producer).
    pub fn has_buffered(&self) -> bool {
        self.avail > 0
    }

    /// The input.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The input, no longer counted.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// The line of the last byte consumed (a line break belongs to the
    /// line it ends); 1 before anything was consumed. Constant time.
    #[inline]
    pub fn last_line(&self) -> u64 {
        let ends_line = self.lines > 0
            && self.ring[((self.lines - 1) % RING as u64) as usize] + 1 == self.consumed;
        if ends_line {
            self.lines
        } else {
            self.lines + 1
        }
    }

    /// Line and column of `offset`, which must not lie beyond the consumed end.
    pub fn position(&self, offset: u64) -> Position {
        let offset = offset.min(self.consumed);
        let mut line = self.lines + 1;
        let remembered = self.lines.min(RING as u64);
        for k in 0..remembered {
            let nl = self.ring[((self.lines - 1 - k) % RING as u64) as usize];
            if nl < offset {
                return Position {
                    offset,
                    line,
                    column: offset - nl,
                };
            }
            line -= 1;
        }
        let column = if remembered == self.lines {
            offset + 1
        } else {
            1
        };
        Position {
            offset,
            line,
            column,
        }
    }
}

impl<R: BufRead> Read for LineCounter<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = {
            let buf = self.fill_buf()?;
            let n = buf.len().min(out.len());
            out[..n].copy_from_slice(&buf[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for LineCounter<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let buf = self.inner.fill_buf()?;
        self.avail = buf.len();
        Ok(buf)
    }

    fn consume(&mut self, amt: usize) {
        if amt > 0 {
            // `BufRead` promises that `fill_buf` returns the current buffer
            // without reading while it is non-empty, and `amt` bytes of it
            // were just handed out, so this does no I/O and cannot fail.
            if let Ok(buf) = self.inner.fill_buf() {
                let taken = &buf[..amt.min(buf.len())];
                for i in memchr::memchr_iter(b'\n', taken) {
                    self.ring[(self.lines % RING as u64) as usize] = self.consumed + i as u64;
                    self.lines += 1;
                }
            }
        }
        self.consumed += amt as u64;
        self.avail = self.avail.saturating_sub(amt);
        self.inner.consume(amt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_offsets_to_lines_and_columns() {
        let text = b"ab\ncde\n\nf";
        let mut c = LineCounter::new(io::BufReader::with_capacity(2, &text[..]));
        let mut all = Vec::new();
        c.read_to_end(&mut all).expect("in-memory read");
        let at = |o| {
            let p = c.position(o);
            (p.line, p.column)
        };
        assert_eq!(at(0), (1, 1));
        assert_eq!(at(1), (1, 2));
        assert_eq!(at(2), (1, 3)); // the newline itself ends line 1
        assert_eq!(at(3), (2, 1));
        assert_eq!(at(7), (3, 1));
        assert_eq!(at(8), (4, 1));
    }

    #[test]
    fn many_lines_consumed_at_once_map_like_one_at_a_time() {
        let text: String = (0..3 * RING)
            .map(|i| format!("{}\n", "x".repeat(i % 7)))
            .collect();
        let mut whole = LineCounter::new(text.as_bytes());
        whole.consume(text.len());
        let mut bytewise = LineCounter::new(io::BufReader::with_capacity(1, text.as_bytes()));
        let mut all = Vec::new();
        bytewise.read_to_end(&mut all).expect("in-memory read");
        for o in (text.len() - 2 * RING)..=text.len() {
            assert_eq!(whole.position(o as u64), bytewise.position(o as u64), "{o}");
        }
    }

    #[test]
    fn last_line_is_the_line_of_the_last_byte() {
        let text = b"ab\ncde\n\nf";
        let mut c = LineCounter::new(&text[..]);
        assert_eq!(c.last_line(), 1);
        for (n, line) in [(1, 1), (2, 1), (3, 1), (6, 2), (7, 2), (8, 3), (9, 4)] {
            c.consume(n - c.consumed as usize);
            assert_eq!(c.last_line(), line, "after {n} bytes");
            assert_eq!(c.last_line(), c.position(n as u64 - 1).line);
        }
    }

    #[test]
    fn long_inputs_count_every_line() {
        let text = "\n".repeat(RING + 10);
        let mut c = LineCounter::new(text.as_bytes());
        let mut all = Vec::new();
        c.read_to_end(&mut all).expect("in-memory read");
        assert_eq!(c.position(text.len() as u64).line, RING as u64 + 11);
        assert_eq!(c.position(text.len() as u64 - 1).line, RING as u64 + 10);
    }
}
