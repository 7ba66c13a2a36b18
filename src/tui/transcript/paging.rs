//! Tests of paging through a loaded transcript window.

use super::*;
use crate::session::{NewMessage, Role};

fn session(n: i64) -> Transcript {
    let mut t = Transcript::new("s", n, true);
    for c in 0..=chunk_of(n) {
        let (a, b) = chunk_range(c);
        t.requested(c, c as u64);
        let msgs = (a..=b.min(n))
            .map(|seq| {
                let text = format!("message {seq}\nsecond line");
                Message::stored(seq, NewMessage::text(Role::User, text))
            })
            .collect();
        assert!(t.loaded(c as u64, a, msgs));
    }
    t
}

fn first_shown(t: &Transcript, theme: Theme) -> i64 {
    t.visible(60, 20, theme)[0].0
}

#[test]
fn paging_moves_one_page_each_way() {
    let th = Theme::new(false);
    let mut t = session(300);
    let at_end = first_shown(&t, th);
    assert!(at_end > 290, "{at_end}");
    t.scroll(-18, 60, 20, th);
    let up = first_shown(&t, th);
    assert!((at_end - 6..at_end).contains(&up), "{at_end} -> {up}");
    t.scroll(18, 60, 20, th);
    assert_eq!(first_shown(&t, th), at_end);
    // Paging down at the end stays at the end (the last line stays on screen).
    t.scroll(18, 60, 20, th);
    let vis = t.visible(60, 20, th);
    assert_eq!(vis.len(), 20);
    assert_eq!(vis.last().map(|(s, _)| *s), Some(300));
}
