//! A session's transcript as the TUI holds it: a window of messages loaded by seq around the
//! viewport, each laid out into lines for a width on demand and cached, so only what is
//! visible is ever laid out.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

use ratatui::text::{Line, Span};

use super::theme::Theme;
use crate::session::Message;

mod marks;
mod message;
mod tool;

pub(crate) use marks::CANCELLED_MARK;
pub(crate) use message::{message_lines, user_text_lines};

/// Messages per loaded chunk.
pub(crate) const CHUNK: i64 = 128;
/// Chunks kept in memory before far ones are dropped.
const MAX_CHUNKS: usize = 24;

/// Where a chunk stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkState {
    /// Asked for with this token.
    Requested(u64),
    /// Loaded.
    Loaded,
}

type Laid = Rc<Vec<Line<'static>>>;

/// One session's transcript window.
#[derive(Debug, Default)]
pub struct Transcript {
    /// Session id.
    pub id: String,
    /// Highest seq of the session (0 = empty).
    pub last_seq: i64,
    /// Loaded messages by seq.
    pub msgs: BTreeMap<i64, Message>,
    /// Chunk index → state.
    pub chunks: HashMap<i64, ChunkState>,
    /// The selected message.
    pub selected: Option<i64>,
    /// First visible message and lines of it scrolled past.
    pub top: (i64, usize),
    /// Stick to the end (the conversation view, `G`).
    pub follow_end: bool,
    /// Messages whose tool details are expanded.
    pub expanded: HashSet<i64>,
    /// Tool call id → tool name, from loaded assistant messages.
    pub tool_names: HashMap<String, String>,
    /// The code block copied last: (seq, index), so the next copy takes the one after.
    pub code_copied: Option<(i64, usize)>,
    cache: RefCell<HashMap<i64, (usize, bool, Laid)>>,
}

/// The chunk holding `seq`.
pub(crate) fn chunk_of(seq: i64) -> i64 {
    (seq.max(1) - 1) / CHUNK
}

/// First and last seq of a chunk.
pub(crate) fn chunk_range(c: i64) -> (i64, i64) {
    (c * CHUNK + 1, (c + 1) * CHUNK)
}

impl Transcript {
    /// An empty window over session `id` whose highest seq is `last_seq`.
    pub(crate) fn new(id: &str, last_seq: i64, follow_end: bool) -> Transcript {
        Transcript {
            id: id.to_string(),
            last_seq,
            top: (1, 0),
            follow_end,
            ..Transcript::default()
        }
    }

    /// Chunks needed for a viewport of `height` lines that are neither loaded nor asked for.
    pub(crate) fn wanted_chunks(&self, height: usize) -> Vec<i64> {
        if self.last_seq == 0 {
            return Vec::new();
        }
        let h = height as i64 + 8;
        let (from, to) = if self.follow_end {
            (self.last_seq - h, self.last_seq)
        } else {
            let anchor = self.selected.unwrap_or(self.top.0).min(self.top.0);
            (anchor - 8, self.top.0.max(self.selected.unwrap_or(0)) + h)
        };
        let (from, to) = (from.max(1), to.min(self.last_seq).max(1));
        (chunk_of(from)..=chunk_of(to))
            .filter(|c| !self.chunks.contains_key(c))
            .collect()
    }

    /// Marks a chunk requested.
    pub(crate) fn requested(&mut self, chunk: i64, token: u64) {
        self.chunks.insert(chunk, ChunkState::Requested(token));
    }

    /// Takes a loaded chunk if it is the answer still awaited.
    pub(crate) fn loaded(&mut self, token: u64, from: i64, messages: Vec<Message>) -> bool {
        let c = chunk_of(from);
        if self.chunks.get(&c) != Some(&ChunkState::Requested(token)) {
            return false;
        }
        self.chunks.insert(c, ChunkState::Loaded);
        for m in messages {
            for call in &m.tool_calls {
                self.tool_names.insert(call.id.clone(), call.name.clone());
            }
            self.cache.borrow_mut().remove(&m.seq);
            self.msgs.insert(m.seq, m);
        }
        self.evict(c);
        true
    }

    /// Drops the chunks farthest from `keep` when too many are loaded.
    fn evict(&mut self, keep: i64) {
        if self.chunks.len() <= MAX_CHUNKS {
            return;
        }
        let mut loaded: Vec<i64> = self.chunks.keys().copied().collect();
        loaded.sort_by_key(|c| std::cmp::Reverse((c - keep).abs()));
        for c in loaded.into_iter().take(self.chunks.len() - MAX_CHUNKS) {
            self.chunks.remove(&c);
            let (a, b) = chunk_range(c);
            let seqs: Vec<i64> = self.msgs.range(a..=b).map(|(s, _)| *s).collect();
            let mut cache = self.cache.borrow_mut();
            for s in seqs {
                self.msgs.remove(&s);
                cache.remove(&s);
            }
        }
    }

    /// Whether a seq's chunk is loaded (a missing message there is a gap, not pending).
    fn is_loaded(&self, seq: i64) -> bool {
        self.chunks.get(&chunk_of(seq)) == Some(&ChunkState::Loaded)
    }

    /// The lines of message `seq` for `width` columns (cached).
    pub(crate) fn lines(&self, seq: i64, width: usize, theme: Theme) -> Laid {
        let expanded = self.expanded.contains(&seq);
        if let Some((w, e, l)) = self.cache.borrow().get(&seq)
            && *w == width
            && *e == expanded
        {
            return l.clone();
        }
        let laid: Laid = match self.msgs.get(&seq) {
            Some(m) => Rc::new(message_lines(m, width, expanded, &self.tool_names, theme)),
            None if self.is_loaded(seq) => Rc::new(Vec::new()),
            None => Rc::new(vec![Line::from(Span::styled(
                format!("  … loading message {seq}"),
                theme.dim(),
            ))]),
        };
        if self.msgs.contains_key(&seq) {
            self.cache
                .borrow_mut()
                .insert(seq, (width, expanded, laid.clone()));
        }
        laid
    }

    fn height(&self, seq: i64, width: usize, theme: Theme) -> usize {
        self.lines(seq, width, theme).len()
    }

    /// The visible lines for a viewport, each with the seq it belongs to.
    pub(crate) fn visible(
        &self,
        width: usize,
        height: usize,
        theme: Theme,
    ) -> Vec<(i64, Line<'static>)> {
        if self.last_seq == 0 || height == 0 {
            return Vec::new();
        }
        if self.follow_end {
            let mut out: Vec<(i64, Line<'static>)> = Vec::new();
            let mut seq = self.last_seq;
            while seq >= 1 && out.len() < height {
                let l = self.lines(seq, width, theme);
                let mut chunk: Vec<(i64, Line<'static>)> =
                    l.iter().cloned().map(|x| (seq, x)).collect();
                chunk.append(&mut out);
                out = chunk;
                seq -= 1;
            }
            let skip = out.len().saturating_sub(height);
            return out.split_off(skip);
        }
        let mut out = Vec::new();
        let (mut seq, mut skip) = self.top;
        while seq <= self.last_seq && out.len() < height {
            let l = self.lines(seq, width, theme);
            for line in l.iter().skip(skip) {
                if out.len() == height {
                    break;
                }
                out.push((seq, line.clone()));
            }
            skip = 0;
            seq += 1;
        }
        out
    }

    /// Pins the view (leaves follow-end) at what is currently shown at the top.
    fn unfollow(&mut self, width: usize, height: usize, theme: Theme) {
        if self.follow_end {
            // What is shown now, measured while still following the end.
            let vis = self.visible(width, height, theme);
            self.follow_end = false;
            if let Some((seq, _)) = vis.first() {
                let before = vis.iter().take_while(|(s, _)| s == seq).count();
                let total = self.height(*seq, width, theme);
                self.top = (*seq, total.saturating_sub(before));
            }
        }
    }

    /// Scrolls by `delta` lines.
    pub(crate) fn scroll(&mut self, delta: i64, width: usize, height: usize, theme: Theme) {
        if self.last_seq == 0 {
            return;
        }
        self.unfollow(width, height, theme);
        let (mut seq, mut off) = self.top;
        // The offset was taken at another width: a narrower or wider layout changes every
        // message's height, so keep it inside the message it points into.
        off = off.min(self.height(seq, width, theme).saturating_sub(1));
        if delta > 0 {
            let mut left = delta as usize;
            while left > 0 {
                let h = self.height(seq, width, theme);
                if off + left < h {
                    off += left;
                    left = 0;
                } else if seq < self.last_seq {
                    left -= h - off;
                    seq += 1;
                    off = 0;
                } else {
                    off = h.saturating_sub(1);
                    left = 0;
                }
            }
        } else {
            let mut left = (-delta) as usize;
            while left > 0 {
                if off >= left {
                    off -= left;
                    left = 0;
                } else if seq > 1 {
                    left -= off;
                    seq -= 1;
                    off = self.height(seq, width, theme);
                } else {
                    off = 0;
                    left = 0;
                }
            }
        }
        self.top = (seq, off);
        if self.at_end(width, height, theme) {
            self.follow_end = true;
        }
    }

    fn at_end(&self, width: usize, height: usize, theme: Theme) -> bool {
        let mut lines = 0usize;
        let (mut seq, off) = self.top;
        lines += self.height(seq, width, theme).saturating_sub(off);
        while seq < self.last_seq && lines <= height {
            seq += 1;
            lines += self.height(seq, width, theme);
        }
        lines <= height
    }

    /// Moves the selection by `delta` messages (skipping gaps) and brings it into view.
    pub(crate) fn select_by(&mut self, delta: i64, width: usize, height: usize, theme: Theme) {
        if self.last_seq == 0 {
            return;
        }
        let Some(cur) = self.selected else {
            let vis = self.visible(width, height, theme);
            let first = vis.first().map(|(s, _)| *s).unwrap_or(1);
            let last = vis.last().map(|(s, _)| *s).unwrap_or(self.last_seq);
            self.selected = Some(if delta < 0 { last } else { first });
            self.reveal(width, height, theme);
            return;
        };
        let mut s = cur;
        let step = delta.signum();
        for _ in 0..delta.abs() {
            let mut n = s + step;
            while n >= 1 && n <= self.last_seq && self.is_loaded(n) && !self.msgs.contains_key(&n) {
                n += step;
            }
            if n < 1 || n > self.last_seq {
                break;
            }
            s = n;
        }
        self.select(s, width, height, theme);
    }

    /// Selects `seq` and brings it into view.
    pub fn select(&mut self, seq: i64, width: usize, height: usize, theme: Theme) {
        self.selected = Some(seq.clamp(1, self.last_seq.max(1)));
        self.reveal(width, height, theme);
    }

    /// Scrolls so the selected message is visible.
    fn reveal(&mut self, width: usize, height: usize, theme: Theme) {
        let Some(sel) = self.selected else { return };
        let vis = self.visible(width, height, theme);
        let shown = vis.iter().filter(|(s, _)| *s == sel).count();
        let full = self.height(sel, width, theme);
        if shown == full.min(height) && shown > 0 {
            return;
        }
        self.follow_end = false;
        let top_seq = vis.first().map(|(s, _)| *s).unwrap_or(self.top.0);
        if sel <= top_seq || full >= height {
            self.top = (sel, 0);
        } else {
            // Bottom-align the selected message.
            let mut lines = full;
            let mut seq = sel;
            while seq > 1 {
                let h = self.height(seq - 1, width, theme);
                if lines + h > height {
                    self.top = (seq - 1, lines + h - height);
                    return;
                }
                lines += h;
                seq -= 1;
            }
            self.top = (1, 0);
        }
    }

    /// Goes to the start.
    pub(crate) fn home(&mut self) {
        self.follow_end = false;
        self.top = (1, 0);
        if self.selected.is_some() {
            self.selected = Some(1);
        }
    }

    /// Goes to the end.
    pub(crate) fn end(&mut self) {
        self.follow_end = true;
        if self.selected.is_some() {
            self.selected = Some(self.last_seq);
        }
    }

    /// Forgets the layout cache (the theme or a tool name changed).
    pub(crate) fn clear_cache(&self) {
        self.cache.borrow_mut().clear();
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod paging;
