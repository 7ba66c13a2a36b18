//! Full-text search as a user checks it: CJK words inside a sentence and emoji are found with
//! a highlighted snippet, Latin search behaves as before, ranking is sane, the count of matches
//! is exact up to the bound and says "more" beyond it, and a database indexed by the previous
//! schema is rebuilt so its old CJK text becomes findable.

use crate::support::Env;
use neocode::session::search::{PrefixLimits, PrefixSearch};
use neocode::session::{
    AppendMeta, NewMessage, NewSession, Role, SEARCH_CANDIDATES, SNIPPET_CLOSE, SNIPPET_OPEN,
    SearchResults, Store,
};

fn store_with(t: &Env, texts: &[&str]) -> Store {
    let s = Store::open(t.paths()).unwrap();
    s.create_session(NewSession {
        id: Some("s".into()),
        title: "search".into(),
        ..NewSession::default()
    })
    .unwrap();
    let msgs: Vec<NewMessage> = texts
        .iter()
        .map(|t| NewMessage::text(Role::User, *t))
        .collect();
    s.append_messages("s", &msgs, &AppendMeta::default())
        .unwrap();
    s
}

fn marked(word: &str) -> String {
    format!("{SNIPPET_OPEN}{word}{SNIPPET_CLOSE}")
}

fn seqs(s: &Store, q: &str) -> Vec<i64> {
    s.search(q, 50)
        .unwrap()
        .into_iter()
        .map(|h| h.seq)
        .collect()
}

#[test]
fn a_two_character_cjk_word_inside_a_sentence_is_found_with_its_snippet() {
    let t = Env::new();
    let s = store_with(
        &t,
        &[
            "请修正状态栏的显示错误，然后运行测试",
            "ログの状態を確認してください",
            "상태가 이상합니다",
            "unrelated English text",
        ],
    );
    let hits = s.search("修正", 10).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].seq, 1);
    assert!(
        hits[0].snippet.contains(&marked("修正")),
        "{:?}",
        hits[0].snippet
    );
    assert!(
        !hits[0].snippet.contains('\u{1f}'),
        "no index separators shown"
    );
    assert!(hits[0].snippet.contains("请"), "context around the word");
    assert_eq!(seqs(&s, "状态"), [1]);
    assert_eq!(seqs(&s, "状態"), [2], "Japanese");
    assert_eq!(seqs(&s, "상태"), [3], "Korean");
    assert_eq!(seqs(&s, "运行测试"), [1], "a longer word");
    assert_eq!(
        seqs(&s, "修状"),
        Vec::<i64>::new(),
        "characters apart are no match"
    );
    assert_eq!(seqs(&s, "请修正状态栏的显示错误"), [1], "the whole phrase");
}

#[test]
fn emoji_are_found_alone_and_next_to_words() {
    let t = Env::new();
    let s = store_with(
        &t,
        &[
            "All tests pass ✅ ready to merge",
            "build broken❌ again",
            "部署完成✅",
            "no symbols here",
        ],
    );
    let mut found = seqs(&s, "✅");
    found.sort();
    assert_eq!(found, [1, 3]);
    assert_eq!(seqs(&s, "❌"), [2]);
    assert_eq!(
        seqs(&s, "broken"),
        [2],
        "a word touching an emoji is still a word"
    );
    let hit = &s.search("❌", 1).unwrap()[0];
    assert!(hit.snippet.contains(&marked("❌")), "{:?}", hit.snippet);
    assert_eq!(seqs(&s, "完成✅"), [3]);
}

#[test]
fn latin_search_keeps_its_behaviour() {
    let t = Env::new();
    let s = store_with(
        &t,
        &[
            "the café serves naïve coffee",
            "it is 20°C outside",
            "© 2024 the authors",
            "refactoring the parser module",
        ],
    );
    assert_eq!(seqs(&s, "cafe"), [1], "diacritics folded");
    assert_eq!(seqs(&s, "NAIVE"), [1], "case folded");
    assert_eq!(seqs(&s, "20 outside"), [2], "a number next to a symbol");
    assert_eq!(seqs(&s, "2024"), [3]);
    assert_eq!(seqs(&s, "refact"), [4], "the last word is a prefix");
    assert_eq!(seqs(&s, "parser refactoring"), [4], "words in any order");
    assert_eq!(seqs(&s, "parser coffee"), Vec::<i64>::new(), "every word");
}

#[test]
fn more_matches_rank_first_and_ties_go_to_the_newest() {
    let t = Env::new();
    let s = store_with(
        &t,
        &[
            "walrus walrus walrus",
            "a walrus sat",
            "a walrus ran",
            "one walrus in a much longer message about parsing tokens and grammars and lexers",
        ],
    );
    assert_eq!(seqs(&s, "walrus"), [1, 3, 2, 4]);
    let r = s.search_counted("walrus", 2).unwrap();
    assert_eq!(r.hits.len(), 2, "limit");
    assert_eq!(
        (r.matched, r.more),
        (4, false),
        "exact count below the bound"
    );
}

#[test]
fn the_count_is_bounded_and_only_the_newest_matches_are_ranked() {
    let t = Env::new();
    let n = SEARCH_CANDIDATES + 50;
    let mut texts: Vec<String> = vec!["common common common common common common".into()];
    texts.extend((1..n).map(|i| format!("common message number {i:05}")));
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let s = store_with(&t, &refs);
    let r = s.search_counted("common", 20).unwrap();
    assert_eq!((r.matched, r.more), (SEARCH_CANDIDATES, true));
    assert_eq!(r.hits.len(), 20);
    let oldest_ranked = (n - SEARCH_CANDIDATES) as i64 + 1;
    assert!(
        r.hits.iter().all(|h| h.seq >= oldest_ranked),
        "only the newest {SEARCH_CANDIDATES} are candidates: {:?}",
        r.hits.iter().map(|h| h.seq).collect::<Vec<_>>()
    );
    assert_eq!(r.hits[0].seq, n as i64, "equal scores: newest first");
    // A rarer word in the same messages is counted exactly.
    let r = s.search_counted("number 0007", 100).unwrap();
    assert_eq!((r.matched, r.more, r.hits.len()), (10, false, 10));
}

#[test]
fn a_version_2_index_is_rebuilt_so_old_cjk_text_is_found() {
    let t = Env::new();
    let paths = t.paths();
    {
        // What schema version 2 wrote: CJK runs stored as they were typed.
        let c = t.database_of_version(
            2,
            r#"
            INSERT INTO sessions (id, title, created_at_ms, updated_at_ms, last_seq, message_count)
                VALUES ('old', 'v2', 1, 2, 2, 2);
            INSERT INTO message_fts (rowid, body) VALUES (7, '请修正状态栏 ✅'), (9, 'plain walrus');
            INSERT INTO messages (id, session_id, seq, role, parts_json, created_at_ms, fts_id)
                VALUES (1, 'old', 1, 'user', '[{"kind":"text","text":"请修正状态栏 ✅"}]', 1, 7),
                       (2, 'old', 2, 'user', '[{"kind":"text","text":"plain walrus"}]', 1, 9);
            "#,
        );
        assert!(
            c.query_row(
                "SELECT count(*) FROM message_fts WHERE message_fts MATCH '\"修正\"'",
                [],
                |r| r.get::<_, i64>(0)
            )
            .unwrap()
                == 0,
            "the old index cannot find the word"
        );
    }
    let s = Store::open(paths).unwrap();
    let hits = s.search("修正", 10).unwrap();
    assert_eq!(
        hits.iter()
            .map(|h| (h.session_id.as_str(), h.seq))
            .collect::<Vec<_>>(),
        [("old", 1)]
    );
    assert!(
        hits[0].snippet.contains(&marked("修正")),
        "{:?}",
        hits[0].snippet
    );
    assert_eq!(seqs(&s, "✅"), [1]);
    assert_eq!(seqs(&s, "walrus"), [2], "Latin rows survive the rebuild");
    s.delete("old").unwrap();
    assert_eq!(
        seqs(&s, "walrus"),
        Vec::<i64>::new(),
        "row ids kept: delete still finds them"
    );
}

/// A history where the words starting with "ple" fill many index pages: an old "plethora",
/// then 4,000 messages saying "please" sixty times (every tenth also "plexus"), written a
/// thousand at a time so the index holds merged segments as a long history does, then a
/// message with the word "p" and one with "plexiglass", newest.
fn prefix_history(t: &Env) -> Store {
    let s = store_with(t, &["a plethora of flags"]);
    for batch in 0..4 {
        let msgs: Vec<NewMessage> = (batch * 1000..(batch + 1) * 1000)
            .map(|i| {
                let extra = if i % 10 == 0 {
                    "plexus with the result"
                } else {
                    ""
                };
                let text = format!("{} item {i} {extra}", "please ".repeat(60));
                NewMessage::text(Role::User, text)
            })
            .collect();
        s.append_messages("s", &msgs, &AppendMeta::default())
            .unwrap();
    }
    let last = ["option p is set", "plexiglass left"].map(|t| NewMessage::text(Role::User, t));
    s.append_messages("s", &last, &AppendMeta::default())
        .unwrap();
    s
}

/// Limits on completing the last word for this small history (the store's own are sized for
/// millions of messages). FTS5's prefix query costs some 70 pages for "ple" here, and under 20
/// for "pleth", though the pages of "please" lie right before it; "ple" starts four words.
const TIGHT: PrefixLimits = PrefixLimits {
    pages: 40,
    words: 2,
};

/// No prefix is cheap enough and no word may be listed: every completion is from recent words.
const NONE: PrefixLimits = PrefixLimits { pages: 0, words: 0 };

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(ToString::to_string).collect()
}

#[test]
fn a_costly_prefix_finds_the_recent_messages_of_the_words_it_completes_to_and_says_so() {
    let t = Env::new();
    let s = prefix_history(&t);
    let last = 4003;

    let r = s.search_counted_within("ple", 20, TIGHT).unwrap();
    assert_eq!(
        r.prefix,
        PrefixSearch::RecentWords {
            prefix: "ple".into(),
            words: words(&["please", "plexus", "plexiglass"]),
        },
        "the words in most recent messages first"
    );
    assert_eq!((r.matched, r.more), (SEARCH_CANDIDATES, true));
    assert_eq!(r.hits.len(), 20);
    for h in &r.hits {
        assert!(
            ["please", "plexus", "plexiglass"]
                .iter()
                .any(|w| h.snippet.contains(&marked(w))),
            "{:?}",
            h.snippet
        );
        assert!(h.seq > last - SEARCH_CANDIDATES as i64, "recent: {}", h.seq);
    }
    assert!(
        r.hits.iter().all(|h| h.seq != 1),
        "an old word not in recent messages is not completed to"
    );

    // The other words must match as well; the completed word is any of the recent ones.
    let r = s.search_counted_within("result ple", 500, TIGHT).unwrap();
    assert_eq!((r.matched, r.more), (400, false));
    assert!(r.hits.iter().all(|h| h.snippet.contains(&marked("plexus"))));

    // The default budget is sized for millions of messages: here the prefix is expanded
    // in full and the old word is found.
    let r = s.search_counted("pleth", 10).unwrap();
    assert_eq!(r.prefix, PrefixSearch::Complete);
    assert_eq!(r.hits.iter().map(|h| h.seq).collect::<Vec<_>>(), [1]);
}

#[test]
fn a_rare_prefix_is_expanded_in_full_even_behind_a_common_word() {
    let t = Env::new();
    let s = prefix_history(&t);
    // "plethora" sorts right after the pages of "please", which FTS5 only reads past: its
    // prefix query is cheap enough even when no word may be listed instead.
    let prefix_query_only = PrefixLimits { words: 0, ..TIGHT };
    for limits in [prefix_query_only, TIGHT] {
        let r = s.search_counted_within("pleth", 10, limits).unwrap();
        assert_eq!(r.prefix, PrefixSearch::Complete);
        assert_eq!(seqs_of(&r), [1]);
        let r = s.search_counted_within("flags pleth", 10, limits).unwrap();
        assert_eq!(seqs_of(&r), [1]);
    }
}

#[test]
fn a_costly_prefix_that_starts_few_words_is_searched_as_all_of_them() {
    let t = Env::new();
    let s = prefix_history(&t);
    let few_words = PrefixLimits { words: 5, ..TIGHT };
    let r = s.search_counted_within("ple", 20, few_words).unwrap();
    assert_eq!(r.prefix, PrefixSearch::Complete);
    assert_eq!((r.matched, r.more), (SEARCH_CANDIDATES, true));
    // Every word is searched, the old one too.
    let r = s.search_counted_within("flags ple", 20, few_words).unwrap();
    assert_eq!(
        (r.prefix.clone(), seqs_of(&r)),
        (PrefixSearch::Complete, vec![1])
    );
    let r = s
        .search_counted_within("result ple", 500, few_words)
        .unwrap();
    assert_eq!((r.matched, r.more), (400, false));
    // One letter too: "p" starts five words here.
    let r = s.search_counted_within("set p", 20, few_words).unwrap();
    assert_eq!(
        (r.prefix.clone(), seqs_of(&r)),
        (PrefixSearch::Complete, vec![4002])
    );
}

#[test]
fn one_costly_letter_is_searched_as_a_whole_word() {
    let t = Env::new();
    let s = prefix_history(&t);
    let r = s.search_counted_within("p", 10, TIGHT).unwrap();
    assert_eq!(r.prefix, PrefixSearch::NotExpanded { prefix: "p".into() });
    assert_eq!(r.hits.iter().map(|h| h.seq).collect::<Vec<_>>(), [4002]);
    // Cheap enough, one letter is still a prefix.
    let r = s.search_counted("p", 10).unwrap();
    assert_eq!((r.prefix, r.more), (PrefixSearch::Complete, true));
}

#[test]
fn completion_folds_case_and_accents_and_leaves_cjk_alone() {
    let t = Env::new();
    let s = store_with(
        &t,
        &["le Café est ouvert", "请修正状态栏", "module_parser broke"],
    );
    let r = s.search_counted_within("CAF", 10, NONE).unwrap();
    assert_eq!(
        r.prefix,
        PrefixSearch::RecentWords {
            prefix: "caf".into(),
            words: words(&["cafe"]),
        }
    );
    assert_eq!(seqs_of(&r), [1]);
    // A CJK character is a word of its own: nothing to complete, found as typed.
    let r = s.search_counted_within("修正状", 10, NONE).unwrap();
    assert_eq!(
        (r.prefix, seqs_of_hits(&r.hits)),
        (PrefixSearch::Complete, vec![2])
    );
    // The last part of a word joined by punctuation is the one completed.
    let r = s.search_counted_within("module_par", 10, NONE).unwrap();
    assert_eq!(
        r.prefix,
        PrefixSearch::RecentWords {
            prefix: "par".into(),
            words: words(&["parser"]),
        }
    );
    assert_eq!(seqs_of(&r), [3]);
}

fn seqs_of_hits(hits: &[neocode::session::SearchHit]) -> Vec<i64> {
    hits.iter().map(|h| h.seq).collect()
}

fn seqs_of(r: &SearchResults) -> Vec<i64> {
    seqs_of_hits(&r.hits)
}

#[test]
fn a_long_output_full_of_the_word_is_found_ranked_and_shown_around_its_first_match() {
    // A 200 KB log holding "Timeout" 8,000 times: FTS5's own snippet scores a window at
    // every match (seconds for a few such messages), so long messages are cut in Rust.
    let mut log = String::from("starting the suite\n");
    for i in 0..8_000 {
        log.push_str(&format!("test case {i} failed: Timeout after 30s\n"));
    }
    let t = Env::new();
    let s = store_with(
        &t,
        &[
            "a short note about a timeout",
            &log,
            "nothing relevant here",
            "another timeout, and one more timeout",
        ],
    );
    let found = s.search_counted("timeout", 10).unwrap();
    assert_eq!(found.matched, 3);
    let by_seq = |seq: i64| found.hits.iter().find(|h| h.seq == seq).unwrap();
    // Found, with the matched word marked in a short excerpt around its first match.
    let long = by_seq(2);
    assert!(
        long.snippet.contains(&marked("Timeout")),
        "{:?}",
        long.snippet
    );
    assert!(long.snippet.starts_with('…') && long.snippet.ends_with('…'));
    assert!(long.snippet.chars().count() < 200, "{:?}", long.snippet);
    // Short messages keep FTS5's snippets, and the two-match note outranks the one-match one.
    assert!(by_seq(4).snippet.contains(&marked("timeout")));
    let order: Vec<i64> = found.hits.iter().map(|h| h.seq).collect();
    let pos = |seq| order.iter().position(|&s| s == seq).unwrap();
    assert!(pos(4) < pos(1), "{order:?}");
    // A match far into the log is found and shown where it is.
    assert_eq!(seqs(&s, "case 7999"), vec![2]);
    let far = &s.search("7999", 10).unwrap()[0];
    assert!(far.snippet.contains(&marked("7999")), "{:?}", far.snippet);

    // Text whose lower case moves bytes (İ grows, ẞ shrinks) is cut where it is, not mid-letter.
    let mut odd = String::new();
    for i in 0..3_000 {
        odd.push_str(&format!("İẞ ẞİ Straße {i} İstanbul ẞ\n"));
    }
    let t = Env::new();
    let s = store_with(&t, &[&odd]);
    let hit = &s.search("straße", 5).unwrap()[0];
    assert!(hit.snippet.contains(&marked("straße")), "{:?}", hit.snippet);
}
