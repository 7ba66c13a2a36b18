//! How numbers, times and search results read, everywhere: `--list`, `show`, `search` and the
//! TUI format them with these functions, so the same session reads the same in both (same
//! rounding, same "yesterday", same time zone, same words about a search).

use chrono::{TimeZone, Utc};

use crate::session::search::PrefixSearch;
use crate::session::{SEARCH_CANDIDATES, SearchResults};

/// Kept here for the callers outside the session layer; it lives in `session::error`.
pub(crate) use crate::session::io_error;

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;

/// "just now", "3m ago", "2h ago", "yesterday", "5d ago", then the date (`2024-03-05`) in `tz`.
/// A time in the future (clock skew) reads "just now".
pub(crate) fn relative_time<Tz: TimeZone>(now_ms: i64, then_ms: i64, tz: &Tz) -> String
where
    Tz::Offset: std::fmt::Display,
{
    let d = now_ms.saturating_sub(then_ms);
    if d < MINUTE {
        "just now".to_string()
    } else if d < HOUR {
        format!("{}m ago", d / MINUTE)
    } else if d < DAY {
        format!("{}h ago", d / HOUR)
    } else if d < 2 * DAY {
        "yesterday".to_string()
    } else if d < 7 * DAY {
        format!("{}d ago", d / DAY)
    } else {
        let utc = Utc
            .timestamp_millis_opt(then_ms)
            .single()
            .unwrap_or_default();
        utc.with_timezone(tz).format("%Y-%m-%d").to_string()
    }
}

/// [`relative_time`] for many times in a row (a list): the cell is made once per value it
/// can take (a minute, an hour, a day, a local date) and reused while the times give the
/// same one, instead of formatting a date for every row of a long list.
pub(crate) struct RelativeCells<Tz: TimeZone> {
    now_ms: i64,
    tz: Tz,
    /// What decides the cell last made, and the cell.
    last: Option<(CellKey, String)>,
}

/// What a [`relative_time`] cell depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CellKey {
    /// Under a week ago: the bucket (minutes, hours or days ago, by size).
    Ago(i64, i64),
    /// The local date, as days since the epoch in the zone.
    Date(i64),
}

impl<Tz: TimeZone> RelativeCells<Tz>
where
    Tz::Offset: std::fmt::Display,
{
    /// Cells relative to `now_ms`, dates in `tz`.
    pub(crate) fn new(now_ms: i64, tz: Tz) -> RelativeCells<Tz> {
        RelativeCells {
            now_ms,
            tz,
            last: None,
        }
    }

    /// The cell of `then_ms`: exactly [`relative_time`]`(now_ms, then_ms, tz)`.
    pub(crate) fn cell(&mut self, then_ms: i64) -> &str {
        let d = self.now_ms.saturating_sub(then_ms);
        let key = if d < MINUTE {
            CellKey::Ago(0, 0)
        } else if d < HOUR {
            CellKey::Ago(1, d / MINUTE)
        } else if d < DAY {
            CellKey::Ago(2, d / HOUR)
        } else if d < 2 * DAY {
            CellKey::Ago(3, 0)
        } else if d < 7 * DAY {
            CellKey::Ago(4, d / DAY)
        } else {
            // The local date is the UTC time moved by the zone's offset at that instant.
            let utc = Utc
                .timestamp_millis_opt(then_ms)
                .single()
                .unwrap_or_default()
                .naive_utc();
            let offset = i64::from(
                chrono::Offset::fix(&self.tz.offset_from_utc_datetime(&utc)).local_minus_utc(),
            );
            CellKey::Date((then_ms.div_euclid(1000) + offset).div_euclid(86_400))
        };
        if self.last.as_ref().is_none_or(|(k, _)| *k != key) {
            self.last = Some((key, relative_time(self.now_ms, then_ms, &self.tz)));
        }
        self.last.as_ref().map_or("", |(_, c)| c.as_str())
    }
}

/// 999, 1.2k, 12.3k, 123k, 1.2M, 1.2G: at most four characters plus the unit.
pub(crate) fn compact(n: u64) -> String {
    let mut s = String::with_capacity(6);
    push_compact(&mut s, n);
    s
}

/// `5,000`, `1,234,567`: a count with thousands separators.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `812 B`, `4.2 KB`, `324 KB`, `3.4 MB`: a size in bytes, decimal units, three figures at
/// most.
pub(crate) fn size_si(n: u64) -> String {
    let unit = |v: f64, u: &str| {
        if v < 9.95 {
            format!("{v:.1} {u}")
        } else {
            format!("{v:.0} {u}")
        }
    };
    match n {
        0..1_000 => format!("{n} B"),
        1_000..999_500 => unit(n as f64 / 1e3, "KB"),
        999_500..999_500_000 => unit(n as f64 / 1e6, "MB"),
        _ => unit(n as f64 / 1e9, "GB"),
    }
}

/// The first `len` characters of an id (the list, the TUI's messages, `search`).
pub(crate) fn short_id(id: &str, len: usize) -> &str {
    // Ids are ASCII (UUIDs) nearly always: a byte is a character.
    if id.len() <= len {
        return id;
    }
    if id.as_bytes()[..len].is_ascii() {
        return &id[..len];
    }
    match id.char_indices().nth(len) {
        Some((i, _)) => &id[..i],
        None => id,
    }
}

/// `n` in decimal appended to `out` (what `write!(out, "{n}")` writes, without `core::fmt`,
/// which was a tenth of a `--list` row).
pub(crate) fn push_u64(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    out.push_str(std::str::from_utf8(&digits[i..]).unwrap_or_default());
}

/// [`compact`] appended to `out` (no allocation: `--list` writes two per row).
pub(crate) fn push_compact(out: &mut String, n: u64) {
    let (unit, suffix) = if n < 1_000 {
        push_u64(out, n);
        return;
    } else if n < 999_500 {
        (1_000, 'k')
    } else if n < 999_500_000 {
        (1_000_000, 'M')
    } else {
        (1_000_000_000, 'G')
    };
    // Tenths, rounded half up, in integers to avoid float formatting surprises.
    let tenths = (n as u128 * 10 + unit as u128 / 2) / unit as u128;
    // At most u64::MAX / 10^8: it fits a u64.
    let tenths = tenths as u64;
    push_u64(out, tenths / 10);
    if tenths < 1000 && !tenths.is_multiple_of(10) {
        out.push('.');
        push_u64(out, tenths % 10);
    }
    out.push(suffix);
}

/// Dollars as the list, `show` and the status line print them, at most 7 characters below
/// a billion: `$0.42`, `$123.40`, `<$0.01` for a cost under a cent, `$1.2k` from $1,000.
pub(crate) fn push_usd(out: &mut String, usd: f64) {
    use std::fmt::Write as _;
    if usd > 0.0 && usd < 0.005 {
        out.push_str("<$0.01");
    } else if usd < 999.995 {
        let _ = write!(out, "${:.2}", usd.max(0.0));
    } else {
        out.push('$');
        push_compact(out, usd.round() as u64);
    }
}

/// [`push_usd`] as a new string.
pub(crate) fn usd(usd: f64) -> String {
    let mut s = String::with_capacity(8);
    push_usd(&mut s, usd);
    s
}

/// A timestamp in the local time zone with its offset: `2025-06-01 14:03 +02:00`.
pub(crate) fn timestamp(ms: i64) -> String {
    timestamp_in(ms, &chrono::Local)
}

/// `timestamp` in a given zone.
pub(crate) fn timestamp_in<Tz: TimeZone>(ms: i64, tz: &Tz) -> String
where
    Tz::Offset: std::fmt::Display,
{
    Utc.timestamp_millis_opt(ms)
        .single()
        .map(|d| d.with_timezone(tz).format("%Y-%m-%d %H:%M %:z").to_string())
        .unwrap_or_default()
}

/// The line under the hits: how many matched, how they are ordered, and how the last word was
/// completed when it was not completed in full.
pub(crate) fn search_summary(found: &SearchResults) -> String {
    let shown = found.hits.len();
    let counted = if found.more {
        format!(
            "{shown} shown of {SEARCH_CANDIDATES}+ matching messages; the newest {SEARCH_CANDIDATES} are ranked by how often the words occur"
        )
    } else {
        let n = found.matched;
        let s = if n == 1 { "" } else { "s" };
        format!("{shown} shown of {n} matching message{s}, ranked by how often the words occur")
    };
    match search_completion(&found.prefix) {
        Some(c) => format!("{counted}; {c}"),
        None => counted,
    }
}

/// How the last word was completed, when it was not in full.
pub(crate) fn search_completion(prefix: &PrefixSearch) -> Option<String> {
    Some(match prefix {
        PrefixSearch::Complete => return None,
        PrefixSearch::RecentWords { prefix, words } if words.iter().any(|w| w != prefix) => {
            format!(
                "'{}' completed only to words in recent messages: {}",
                crate::sanitize::line(prefix),
                crate::sanitize::line(&words.join(", "))
            )
        }
        PrefixSearch::RecentWords { prefix, .. } => format!(
            "'{}' searched as typed: too many words start with it and no other in recent messages",
            crate::sanitize::line(prefix)
        ),
        PrefixSearch::NotExpanded { prefix } => format!(
            "'{}' searched as a whole word only: one letter starts too many words",
            crate::sanitize::line(prefix)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000_000;

    /// `f` of each case's input reads as the case's text.
    fn reads<T: Copy + std::fmt::Debug>(f: impl Fn(T) -> String, cases: &[(T, &str)]) {
        for &(input, want) in cases {
            assert_eq!(f(input), want, "{input:?}");
        }
    }

    #[test]
    fn relative_times() {
        let r = |ago: i64| relative_time(NOW, NOW - ago, &Utc);
        reads(
            r,
            &[
                (5_000, "just now"),
                (-90_000, "just now"),
                (3 * MINUTE + 5, "3m ago"),
                (59 * MINUTE, "59m ago"),
                (2 * HOUR, "2h ago"),
                (30 * HOUR, "yesterday"),
                (5 * DAY, "5d ago"),
                // 2023-11-14T22:13:20Z minus 30 days.
                (30 * DAY, "2023-10-15"),
            ],
        );
        let plus9 = chrono::FixedOffset::east_opt(9 * 3600).unwrap();
        assert_eq!(relative_time(NOW, NOW - 30 * DAY, &plus9), "2023-10-16");
    }

    #[test]
    fn counts_and_sizes_read_the_same_everywhere() {
        reads(
            thousands,
            &[
                (0, "0"),
                (999, "999"),
                (5_000, "5,000"),
                (1_234_567, "1,234,567"),
            ],
        );
        reads(
            size_si,
            &[
                (812, "812 B"),
                (4_200, "4.2 KB"),
                (324_000, "324 KB"),
                (999_999, "1.0 MB"),
                (3_400_000, "3.4 MB"),
            ],
        );
    }

    #[test]
    fn relative_cells_are_relative_time_whatever_the_order() {
        let zones = [
            chrono::FixedOffset::east_opt(0).unwrap(),
            chrono::FixedOffset::east_opt(9 * 3600).unwrap(),
            chrono::FixedOffset::west_opt(5 * 3600 + 1800).unwrap(),
        ];
        for tz in zones {
            let mut cells = RelativeCells::new(NOW, tz);
            // Newest first as the list reads, then back and forth, over 120 days.
            let mut ago: Vec<i64> = (0..3000).map(|i| i * i * 1_151).collect();
            ago.extend((0..400).map(|i| (i * 7_919_993) % (120 * DAY)));
            ago.extend([
                -5,
                0,
                MINUTE - 1,
                MINUTE,
                HOUR,
                DAY,
                2 * DAY,
                7 * DAY - 1,
                7 * DAY,
            ]);
            for a in ago {
                assert_eq!(
                    cells.cell(NOW - a),
                    relative_time(NOW, NOW - a, &tz),
                    "{a} ms ago"
                );
            }
        }
    }

    #[test]
    fn digits_as_format_writes_them() {
        for n in [0, 7, 10, 999, 1_000, 123_456_789, u64::MAX] {
            let mut s = String::new();
            push_u64(&mut s, n);
            assert_eq!(s, n.to_string());
        }
        assert_eq!(short_id("0192f3a1-aaaa", 8), "0192f3a1");
        assert_eq!(short_id("ünïcödé-idé", 3), "ünï");
        assert_eq!(short_id("abc", 8), "abc");
    }

    #[test]
    fn compact_numbers() {
        reads(
            compact,
            &[
                (0, "0"),
                (999, "999"),
                (1_000, "1k"),
                (1_234, "1.2k"),
                (12_345, "12.3k"),
                (123_456, "123k"),
                (999_499, "999k"),
                (999_500, "1M"),
                (1_250_000, "1.3M"),
                (4_000_000_000, "4G"),
                // No overflow at the very top.
                (u64::MAX, "18446744073G"),
            ],
        );
        // As `core::fmt` wrote them before (digits by hand since).
        let old = |n: u64| {
            if n < 1_000 {
                return n.to_string();
            }
            let (unit, suffix) = if n < 999_500 {
                (1_000u128, 'k')
            } else if n < 999_500_000 {
                (1_000_000, 'M')
            } else {
                (1_000_000_000, 'G')
            };
            let tenths = (n as u128 * 10 + unit / 2) / unit;
            if tenths >= 1000 || tenths.is_multiple_of(10) {
                format!("{}{suffix}", tenths / 10)
            } else {
                format!("{}.{}{suffix}", tenths / 10, tenths % 10)
            }
        };
        let mut n = 1u64;
        while n < u64::MAX / 3 {
            for m in [n - 1, n, n + 1, n / 2 * 3, n + n / 20] {
                assert_eq!(compact(m), old(m), "{m}");
            }
            n = n * 3 + 1;
        }
    }

    #[test]
    fn dollars_fit_seven_columns() {
        reads(
            usd,
            &[
                (0.0, "$0.00"),
                (0.004, "<$0.01"),
                (1.234, "$1.23"),
                (999.99, "$999.99"),
                (999.996, "$1k"),
                (12_345.0, "$12.3k"),
                (999_000_000.0, "$999M"),
            ],
        );
    }

    #[test]
    fn timestamps_carry_their_zone() {
        assert_eq!(timestamp_in(NOW, &Utc), "2023-11-14 22:13 +00:00");
        let plus9 = chrono::FixedOffset::east_opt(9 * 3600).unwrap();
        assert_eq!(timestamp_in(NOW, &plus9), "2023-11-15 07:13 +09:00");
    }

    #[test]
    fn the_summary_says_how_many_matched_bounded() {
        let hit = crate::session::SearchHit {
            session_id: "s".into(),
            session_title: "t".into(),
            seq: 1,
            role: crate::session::Role::User,
            snippet: "x".into(),
        };
        let many = SearchResults {
            hits: vec![hit.clone(); 20],
            matched: SEARCH_CANDIDATES,
            more: true,
            prefix: PrefixSearch::Complete,
        };
        assert_eq!(
            search_summary(&many),
            "20 shown of 1000+ matching messages; the newest 1000 are ranked by how often the words occur"
        );
        let one = SearchResults {
            hits: vec![hit],
            matched: 1,
            more: false,
            prefix: PrefixSearch::Complete,
        };
        assert_eq!(
            search_summary(&one),
            "1 shown of 1 matching message, ranked by how often the words occur"
        );
    }

    #[test]
    fn the_summary_says_when_the_last_word_was_not_completed_in_full() {
        let found = |prefix| SearchResults {
            hits: Vec::new(),
            matched: 3,
            more: false,
            prefix,
        };
        assert_eq!(
            search_summary(&found(PrefixSearch::RecentWords {
                prefix: "ple".into(),
                words: vec!["please".into(), "plenty".into()],
            })),
            "0 shown of 3 matching messages, ranked by how often the words occur; 'ple' completed only to words in recent messages: please, plenty"
        );
        assert_eq!(
            search_summary(&found(PrefixSearch::RecentWords {
                prefix: "qz".into(),
                words: vec!["qz".into()],
            })),
            "0 shown of 3 matching messages, ranked by how often the words occur; 'qz' searched as typed: too many words start with it and no other in recent messages"
        );
        assert_eq!(
            search_summary(&found(PrefixSearch::NotExpanded { prefix: "p".into() })),
            "0 shown of 3 matching messages, ranked by how often the words occur; 'p' searched as a whole word only: one letter starts too many words"
        );
    }
}
