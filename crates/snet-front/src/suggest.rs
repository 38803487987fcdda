//! "Did you mean ...?": the defined name nearest to an unknown one.
//!
//! Distance is the optimal string alignment distance (edits, insertions,
//! deletions and swaps of neighbours, from `strsim`), with a difference of
//! case alone counted as closest of all. A name is suggested only if it is
//! at most a third of the unknown name's length away (at least one edit),
//! so short unrelated names are not offered; ties go to the name first in
//! alphabetical order, so messages are stable.

/// The candidate nearest to `name`, if one is near enough.
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    let lower = name.to_lowercase();
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        if c == name {
            continue;
        }
        let d = if c.to_lowercase() == lower {
            0
        } else {
            strsim::osa_distance(name, c)
        };
        if d > limit {
            continue;
        }
        if best.is_none_or(|(bd, bc)| (d, c) < (bd, bc)) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// The help note for an unknown `name`: "help: did you mean `x`?".
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    nearest(name, candidates).map(|c| format!("help: did you mean `{c}`?"))
}

#[cfg(test)]
mod tests {
    use super::nearest;

    #[test]
    fn suggests_the_nearest_name_within_reach() {
        let names = ["greet", "great_big", "merge", "Split"];
        assert_eq!(nearest("gret", names), Some("greet"));
        assert_eq!(nearest("greeet", names), Some("greet"));
        assert_eq!(nearest("split", names), Some("Split"));
        assert_eq!(nearest("mrege", names), Some("merge"));
        assert_eq!(nearest("x", names), None);
        assert_eq!(nearest("totally_else", names), None);
    }

    #[test]
    fn ties_go_to_the_alphabetically_first_name() {
        assert_eq!(nearest("ab", ["ac", "aa"]), Some("aa"));
    }
}
