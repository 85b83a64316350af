//! Clock comments: seconds with up to millisecond precision, read and written exactly.
//!
//! Clocks are carried as `f64` seconds but always hold `millis / 1000.0` for an integer number of
//! milliseconds: division of two exactly representable numbers is correctly rounded, so the value
//! is the double nearest to the decimal, and `(secs * 1000.0).round()` gives the integer back.
//! That makes write-then-read exact.

/// Integer digits above which a number is not taken as a clock (keeps the millisecond count
/// far inside `i64` and `f64`'s exact integer range).
const MAX_INT_DIGITS: usize = 12;

/// Reads a comment's text as a clock: decimal seconds (`118.305`, `-0.2`, `119.9`, digits beyond
/// the third decimal are rounded half away from zero) or `[%clk h:mm:ss(.fff)]`.
/// Returns whole milliseconds, or `None` if the text is anything else.
pub(crate) fn parse_clock_millis(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Some(inner) = text
        .strip_prefix("[%clk")
        .and_then(|rest| rest.strip_suffix(']'))
    {
        return parse_hms_millis(inner.trim());
    }
    parse_seconds_millis(text)
}

fn parse_seconds_millis(text: &str) -> Option<i64> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (int_part, frac_part) = match unsigned.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (unsigned, None),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int_part.is_empty() || int_part.len() > MAX_INT_DIGITS || !all_digits(int_part) {
        return None;
    }
    let mut millis: i64 = int_part.parse::<i64>().ok()? * 1000;
    if let Some(frac) = frac_part {
        if frac.is_empty() || !all_digits(frac) {
            return None;
        }
        let digit = |i: usize| frac.as_bytes().get(i).map_or(0, |b| i64::from(b - b'0'));
        millis += digit(0) * 100 + digit(1) * 10 + digit(2);
        if digit(3) >= 5 {
            millis += 1;
        }
    }
    Some(if negative { -millis } else { millis })
}

fn parse_hms_millis(text: &str) -> Option<i64> {
    let mut parts = text.split(':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let whole = |p: &str, max_len: usize| {
        let ok = !p.is_empty() && p.len() <= max_len && p.bytes().all(|b| b.is_ascii_digit());
        ok.then(|| p.parse::<i64>().ok()).flatten()
    };
    let hours = whole(h, 3)?;
    let minutes = whole(m, 2).filter(|&v| v < 60)?;
    let seconds = parse_seconds_millis(s).filter(|&v| (0..60_000).contains(&v))?;
    Some((hours * 3600 + minutes * 60) * 1000 + seconds)
}

/// Whole milliseconds as `f64` seconds (see the module doc for why this is exact).
pub(crate) fn millis_to_secs(millis: i64) -> f64 {
    millis as f64 / 1000.0
}

/// The nearest whole number of milliseconds to `secs`; `None` for NaN, infinities and values
/// too large to be a clock.
pub(crate) fn secs_to_millis(secs: f64) -> Option<i64> {
    let millis = (secs * 1000.0).round();
    (millis.is_finite() && millis.abs() < 1e15).then_some(millis as i64)
}

/// Seconds for a BPGN clock comment: up to three decimals, trailing zeros dropped but one kept
/// (`118.305`, `119.9`, `120.0`).
pub(crate) fn format_seconds(millis: i64) -> String {
    let sign = if millis < 0 { "-" } else { "" };
    let abs = millis.unsigned_abs();
    let mut frac = format!("{:03}", abs % 1000);
    while frac.len() > 1 && frac.ends_with('0') {
        frac.pop();
    }
    format!("{sign}{}.{frac}", abs / 1000)
}

/// A PGN `[%clk h:mm:ss.t]` value: tenths of a second, truncated as a clock display shows them;
/// negative clocks (a flag fell) are written as zero.
pub(crate) fn format_clk(millis: i64) -> String {
    let tenths = millis.max(0) / 100;
    let (hours, rest) = (tenths / 36_000, tenths % 36_000);
    let (minutes, rest) = (rest / 600, rest % 600);
    format!("{hours}:{minutes:02}:{:02}.{}", rest / 10, rest % 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_seconds_to_millis() {
        assert_eq!(parse_clock_millis("118.305"), Some(118_305));
        assert_eq!(parse_clock_millis("119.9"), Some(119_900));
        assert_eq!(parse_clock_millis(" 120 "), Some(120_000));
        assert_eq!(parse_clock_millis("0.4565"), Some(457));
        assert_eq!(parse_clock_millis("0.4564"), Some(456));
        assert_eq!(parse_clock_millis("-1.5"), Some(-1_500));
        for bad in [
            "",
            ".5",
            "5.",
            "1.2.3",
            "C: hi",
            "1e3",
            "--1",
            "12345678901234",
        ] {
            assert_eq!(parse_clock_millis(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn pgn_clk_comment_is_a_clock_too() {
        assert_eq!(parse_clock_millis("[%clk 0:02:59.5]"), Some(179_500));
        assert_eq!(parse_clock_millis("[%clk 1:00:00]"), Some(3_600_000));
        assert_eq!(parse_clock_millis("[%clk 0:61:00]"), None);
        assert_eq!(parse_clock_millis("[%clk 0:02]"), None);
    }

    #[test]
    fn seconds_are_written_minimally_and_read_back_exactly() {
        assert_eq!(format_seconds(118_305), "118.305");
        assert_eq!(format_seconds(119_900), "119.9");
        assert_eq!(format_seconds(120_000), "120.0");
        assert_eq!(format_seconds(-250), "-0.25");
        for millis in [0, 1, 7, 99, 456, 119_900, 179_547, 5_400_123, -999] {
            let secs = millis_to_secs(millis);
            assert_eq!(secs_to_millis(secs), Some(millis));
            assert_eq!(parse_clock_millis(&format_seconds(millis)), Some(millis));
        }
        assert_eq!(secs_to_millis(f64::NAN), None);
    }

    #[test]
    fn clk_shows_truncated_tenths() {
        assert_eq!(format_clk(179_547), "0:02:59.5");
        assert_eq!(format_clk(179_340), "0:02:59.3");
        assert_eq!(format_clk(3_725_099), "1:02:05.0");
        assert_eq!(format_clk(-300), "0:00:00.0");
    }
}
