//! The text the index holds and the queries typed text becomes: CJK and symbols split into
//! tokens of their own, words quoted for FTS5, and the last word's token folded for completing.

use std::borrow::Cow;

use rusqlite::Connection;

/// Separator inserted into indexed text (ASCII unit separator: one byte, a separator to the
/// tokenizer, never shown).
pub(crate) const SPLIT: char = '\u{1f}';

/// CJK scripts written without spaces between words: Han, kana, Hangul, CJK punctuation and
/// full-width forms.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x2E80..=0x2FDF      // radicals
        | 0x3000..=0x30FF    // CJK symbols, hiragana, katakana
        | 0x3100..=0x31FF    // bopomofo, kanbun, katakana extensions
        | 0x3200..=0x9FFF    // enclosed CJK, compatibility, ext. A, unified ideographs
        | 0xA960..=0xA97F    // hangul jamo ext. A
        | 0xAC00..=0xD7FF    // hangul syllables, jamo ext. B
        | 0xF900..=0xFAFF    // compatibility ideographs
        | 0xFE30..=0xFE4F    // compatibility forms
        | 0xFF00..=0xFFEF    // half- and full-width forms
        | 0x1100..=0x11FF    // hangul jamo
        | 0x20000..=0x3FFFF  // ideograph extensions B–H
    )
}

/// Characters that become tokens of their own: CJK, and any other non-ASCII character that is
/// not a letter or digit (emoji and other symbols; punctuation stays a separator to FTS5).
fn splits(c: char) -> bool {
    !c.is_ascii() && (is_cjk(c) || !(c.is_alphanumeric() || c.is_whitespace()))
}

/// The text to index (and to query with): [`SPLIT`] between every pair of neighbours where one
/// of them [`splits`]. ASCII text is returned as it is.
pub(crate) fn index_text(s: &str) -> Cow<'_, str> {
    if s.is_ascii() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + s.len() / 4);
    let mut prev: Option<char> = None;
    for c in s.chars() {
        if let Some(p) = prev
            && (splits(p) || splits(c))
            && !p.is_whitespace()
            && !c.is_whitespace()
        {
            out.push(SPLIT);
        }
        out.push(c);
        prev = Some(c);
    }
    Cow::Owned(out)
}

/// Registers `neocode_index_text(text)` (`index_text`) on a connection, for the migration
/// that rebuilds the index.
pub fn register_functions(c: &Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    c.create_scalar_function(
        "neocode_index_text",
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let text = ctx.get_raw(0).as_str().unwrap_or_default();
            Ok(index_text(text).into_owned())
        },
    )
}

/// The words of free text as they are indexed ([`index_text`]). Control characters (NUL ends
/// the query string inside FTS5's parser) become spaces.
pub(super) fn query_words(q: &str) -> Vec<String> {
    let q: String = q
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    q.split_whitespace()
        .map(|w| index_text(w).into_owned())
        .collect()
}

/// A word as an FTS5 string (a phrase when it holds several tokens).
pub(super) fn quoted(w: &str) -> String {
    format!("\"{}\"", w.replace('"', "\"\""))
}

/// Turns free text into a safe FTS5 query: every word quoted (a CJK word becomes a phrase of
/// its characters), the last one a prefix when `prefix`.
pub(crate) fn fts_query(q: &str, prefix: bool) -> Option<String> {
    let words = query_words(q);
    if words.is_empty() {
        return None;
    }
    let mut s = words
        .iter()
        .map(|w| quoted(w))
        .collect::<Vec<_>>()
        .join(" ");
    if prefix {
        s.push('*');
    }
    Some(s)
}

/// Lower case without the diacritics `remove_diacritics` folds in Latin-1 letters, for
/// matching words against a typed prefix. Only for comparing: FTS5 folds the words it is
/// given itself, so a letter folded differently here still searches correctly.
pub(super) fn fold_char(c: char) -> impl Iterator<Item = char> {
    c.to_lowercase().map(|c| match c {
        'à'..='å' => 'a',
        'ç' => 'c',
        'è'..='ë' => 'e',
        'ì'..='ï' => 'i',
        'ñ' => 'n',
        'ò'..='ö' => 'o',
        'ù'..='ü' => 'u',
        'ý' | 'ÿ' => 'y',
        c => c,
    })
}

pub(super) fn fold(s: &str) -> String {
    s.chars().flat_map(fold_char).collect()
}

/// A character of a word that can be completed: a letter or digit that is not CJK (those are
/// tokens of one character each in the index).
pub(super) fn word_char(c: char) -> bool {
    c.is_alphanumeric() && !splits(c)
}

/// The last word's final token, the one a prefix query completes: where it starts in the
/// indexed last word, and its folded text. None when there is none, or when the word ends in
/// a CJK character or a symbol: those are tokens of one character, so completing adds nothing.
pub(super) fn last_token(last_word: &str) -> Option<(usize, String)> {
    let (at, last) = last_word
        .char_indices()
        .rev()
        .find(|&(_, c)| word_char(c) || splits(c))?;
    if !word_char(last) {
        return None;
    }
    let end = at + last.len_utf8();
    let start = last_word[..end]
        .char_indices()
        .rev()
        .take_while(|&(_, c)| word_char(c))
        .last()
        .map(|(i, _)| i)?;
    Some((start, fold(&last_word[start..end])))
}
