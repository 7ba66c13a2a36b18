//! `Retry-After` (RFC 9110 §10.2.3): how long a 429 or 503 asks the client to wait.

use std::time::Duration;

/// The wait a `Retry-After` value asks for (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date
/// (IMF-fixdate, and the obsolete RFC 850 and asctime forms) taken relative to `now`; a date
/// already past means at once. `None` for anything else, so the caller keeps its own backoff.
pub(super) fn retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        // Too many digits to fit is still "a very long time", which the caller bounds.
        return Some(Duration::from_secs(v.parse::<u64>().unwrap_or(u64::MAX)));
    }
    let date = http_date(v)?;
    Some((date - now).to_std().unwrap_or(Duration::ZERO))
}

/// An HTTP-date in any of the three forms RFC 9110 §5.6.7 says a recipient accepts; all are
/// in GMT.
fn http_date(v: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    use chrono::NaiveDateTime;
    // IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
    if let Ok(t) = NaiveDateTime::parse_from_str(v, "%a, %d %b %Y %H:%M:%S GMT") {
        return Some(t.and_utc());
    }
    // RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`; a two-digit year more than 50 years ahead
    // is in the past century (RFC 9110 §5.6.7).
    if let Some((weekday, rest)) = v.split_once(", ")
        && weekday.len() > 3
        && let Ok(t) = NaiveDateTime::parse_from_str(rest, "%d-%b-%y %H:%M:%S GMT")
    {
        use chrono::Datelike;
        let this_year = chrono::Utc::now().year();
        let t = if t.year() > this_year + 50 {
            t.with_year(t.year() - 100)?
        } else {
            t
        };
        return Some(t.and_utc());
    }
    // asctime: `Sun Nov  6 08:49:37 1994` (the day is space-padded).
    let words: Vec<&str> = v.split_ascii_whitespace().collect();
    if words.len() == 5 {
        let joined = format!(
            "{} {} {:0>2} {} {}",
            words[0], words[1], words[2], words[3], words[4]
        );
        if let Ok(t) = NaiveDateTime::parse_from_str(&joined, "%a %b %d %H:%M:%S %Y") {
            return Some(t.and_utc());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_all_three_date_forms() {
        let now = chrono::DateTime::parse_from_rfc3339("1994-11-06T08:49:30Z")
            .unwrap()
            .to_utc();
        let secs = |v: &str| retry_after(v, now).map(|d| d.as_secs());
        assert_eq!(secs("120"), Some(120));
        assert_eq!(secs(" 7 "), Some(7));
        assert_eq!(secs("Sun, 06 Nov 1994 08:49:37 GMT"), Some(7));
        assert_eq!(secs("Sunday, 06-Nov-94 08:49:37 GMT"), Some(7));
        assert_eq!(secs("Sun Nov  6 08:49:37 1994"), Some(7));
        assert_eq!(secs("Sun, 06 Nov 1994 09:49:30 GMT"), Some(3600));
        // Already past: at once.
        assert_eq!(secs("Sat, 05 Nov 1994 08:49:37 GMT"), Some(0));
        // A huge number is a huge wait (bounded by the caller), not "no header".
        assert_eq!(secs("99999999999999999999999"), Some(u64::MAX));
    }

    #[test]
    fn a_malformed_retry_after_is_none() {
        let now = chrono::Utc::now();
        for v in [
            "",
            "-5",
            "1.5",
            "soon",
            "Sun, 06 Nov 1994 08:49:37",
            "Sun, 06 Nov 1994 08:49:37 PST",
            "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun Nov  6 08:49:37",
        ] {
            assert_eq!(retry_after(v, now), None, "{v:?}");
        }
    }
}
