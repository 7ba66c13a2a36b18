//! The session file's times: RFC 3339 (UTC, milliseconds) both ways.

use super::doc::{FileError, ferr};

/// Formats ms since the epoch as RFC 3339 (UTC, milliseconds).
pub fn rfc3339(ms: i64) -> String {
    // Years 1970–9999 by arithmetic (a list of 100,000 sessions formats 200,000 of these);
    // anything else as chrono writes it.
    const MAX_MS: i64 = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z
    if !(0..=MAX_MS).contains(&ms) {
        return chrono::DateTime::from_timestamp_millis(ms)
            .unwrap_or_default()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    }
    let (days, rem) = (ms / 86_400_000, ms % 86_400_000);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, sec, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1_000 % 60,
        rem % 1_000,
    );
    // Digits by hand: `format!` with padding cost more than the rest of a list row.
    let mut out = [0u8; 24];
    let mut put = |at: usize, width: usize, mut n: i64| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, month);
    put(8, 2, day);
    put(11, 2, h);
    put(14, 2, m);
    put(17, 2, sec);
    put(20, 3, milli);
    for (i, c) in [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
        (23, b'Z'),
    ] {
        out[i] = c;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(super) fn parse_time(path: &str, s: &str) -> Result<i64, FileError> {
    chrono::DateTime::parse_from_rfc3339(s)
        .map(|d| d.timestamp_millis())
        .map_err(|e| {
            ferr(
                path,
                format!("not an RFC 3339 time ({e}): {:?}", truncate(s)),
            )
        })
}

pub(super) fn truncate(s: &str) -> String {
    s.chars().take(60).collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// The arithmetic agrees with chrono everywhere, the edges of its range included.
        #[test]
        fn rfc3339_is_chronos(ms in prop_oneof![
            -100_000_000_000_000i64..300_000_000_000_000,
            any::<i64>(),
            Just(0i64),
            Just(253_402_300_799_999i64),
            Just(253_402_300_800_000i64),
            Just(-1i64),
            Just(951_782_400_000i64), // 2000-02-29
            Just(1_796_044_962_738i64),
        ]) {
            let chrono = chrono::DateTime::from_timestamp_millis(ms)
                .unwrap_or_default()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            prop_assert_eq!(super::rfc3339(ms), chrono);
        }
    }
}
