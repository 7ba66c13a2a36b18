//! When the event loop wakes up by itself: the next poll for other processes' writes, the
//! next redraw of relative times, and while something animates (a streaming turn) the next
//! frame, at most ~30 a second so a fast stream cannot starve input. Pure: times go in, times
//! come out, so it is tested without sleeping.

use std::time::{Duration, Instant};

/// How often the loop asks whether another process wrote.
pub(crate) const POLL: Duration = Duration::from_secs(1);
/// How often an idle screen is redrawn so "5m ago" stays true.
pub(crate) const CLOCK: Duration = Duration::from_secs(30);
/// The shortest gap between two frames while animating (~30 fps).
pub(crate) const FRAME: Duration = Duration::from_millis(33);
/// The shortest gap while animating when the user typed something: a key is answered on
/// the next frame at once (well under 16 ms), the stream alone never draws faster than
/// [`FRAME`].
pub(crate) const INPUT_FRAME: Duration = Duration::from_millis(8);

/// The loop's timers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    next_poll: Instant,
    next_clock: Instant,
    last_frame: Option<Instant>,
}

impl Pace {
    pub(crate) fn new(now: Instant) -> Pace {
        Pace {
            next_poll: now + POLL,
            next_clock: now + CLOCK,
            last_frame: None,
        }
    }

    pub(crate) fn poll_due(&self, now: Instant) -> bool {
        now >= self.next_poll
    }

    pub(crate) fn polled(&mut self, now: Instant) {
        self.next_poll = now + POLL;
    }

    /// Relative times are due for a redraw.
    pub(crate) fn clock_due(&self, now: Instant) -> bool {
        now >= self.next_clock
    }

    /// Whether a frame may be drawn now: always when idle (draw as soon as something
    /// changed), at most every [`FRAME`] while animating, or every [`INPUT_FRAME`] when
    /// `input` (the user typed) waits to be shown.
    pub(crate) fn may_draw(&self, now: Instant, animating: bool, input: bool) -> bool {
        let gap = if input { INPUT_FRAME } else { FRAME };
        !animating || self.last_frame.is_none_or(|t| now >= t + gap)
    }

    pub(crate) fn drew(&mut self, now: Instant) {
        self.last_frame = Some(now);
        self.next_clock = now + CLOCK;
    }

    /// When to wake if no message arrives. `dirty`: a change waits to be drawn; `input`:
    /// it is the user's.
    pub(crate) fn deadline(&self, dirty: bool, animating: bool, input: bool) -> Instant {
        let mut at = self.next_poll.min(self.next_clock);
        if animating {
            // The next frame: the spinner or stream moves even if no message arrives.
            let gap = if input { INPUT_FRAME } else { FRAME };
            let frame = self.last_frame.map_or(at, |t| t + gap);
            at = at.min(frame);
        } else if dirty && let Some(t) = self.last_frame {
            at = at.min(t);
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_wakes_for_the_poll_then_the_clock() {
        let t0 = Instant::now();
        let mut p = Pace::new(t0);
        p.drew(t0);
        assert_eq!(p.deadline(false, false, false), t0 + POLL);
        assert!(!p.poll_due(t0 + POLL / 2));
        assert!(p.poll_due(t0 + POLL));
        p.polled(t0 + POLL);
        assert_eq!(p.deadline(false, false, false), t0 + 2 * POLL);
        assert!(!p.clock_due(t0 + CLOCK - POLL));
        assert!(p.clock_due(t0 + CLOCK));
    }

    #[test]
    fn a_drawn_frame_pushes_the_clock_redraw_back() {
        let t0 = Instant::now();
        let mut p = Pace::new(t0);
        p.drew(t0 + CLOCK - POLL);
        assert!(!p.clock_due(t0 + CLOCK));
    }

    #[test]
    fn animating_caps_frames_at_about_thirty_a_second() {
        let t0 = Instant::now();
        let mut p = Pace::new(t0);
        assert!(p.may_draw(t0, true, false), "the first frame at once");
        p.drew(t0);
        assert!(!p.may_draw(t0 + FRAME / 2, true, false));
        assert!(p.may_draw(t0 + FRAME, true, false));
        assert_eq!(
            p.deadline(false, true, false),
            t0 + FRAME,
            "the next frame comes unasked"
        );
        assert!(
            p.may_draw(t0 + Duration::from_millis(1), false, false),
            "idle draws at once"
        );
        let frames = (0..1000)
            .map(|ms| t0 + Duration::from_millis(ms))
            .filter(|&now| {
                let ok = p.may_draw(now, true, false);
                if ok {
                    p.drew(now);
                }
                ok
            })
            .count();
        assert!((28..=31).contains(&frames), "{frames} frames in one second");
    }

    #[test]
    fn a_key_while_streaming_is_drawn_without_waiting_for_the_stream_frame() {
        let t0 = Instant::now();
        let mut p = Pace::new(t0);
        p.drew(t0);
        let typed = t0 + Duration::from_millis(10);
        assert!(!p.may_draw(typed, true, false), "the stream alone waits");
        assert!(p.may_draw(typed, true, true), "a key is drawn at once");
        assert_eq!(p.deadline(true, true, true), t0 + INPUT_FRAME);
    }

    #[test]
    fn a_pending_change_wakes_at_once_when_idle() {
        let t0 = Instant::now();
        let mut p = Pace::new(t0);
        p.drew(t0);
        assert_eq!(p.deadline(true, false, false), t0);
    }
}
