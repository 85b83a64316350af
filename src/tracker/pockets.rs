//! Pocket alerts: what each player should hold (the engine's pockets) against what the pocket
//! reader sees, over time.
//!
//! A discrepancy only counts in calm readings and only after it persisted for the grace period;
//! it ends after a few consecutive readings without it (one noisy reading neither raises nor
//! clears an alert). A piece captured on one board is a pending hand-over until the partner's
//! pocket shows it; if the grace period passes first, that is `handover_missing`, any further
//! shortfall is `hidden_pocket`.
//!
//! The pocket reader misreads pieces of sets it was not trained on, often persistently, and
//! every misread shortfall would become an alert. Its pixels are surer: a piece put into a zone
//! changes the zone's look ([`PocketReading::looks`]). So a hand-over also counts as arrived
//! when the receiving zone's look changed since before the capture, and a shortfall is only
//! hidden if the zone's look changed since its content was last known (something was taken
//! away); a zone that looks as it did then holds what it held then.
//!
//! Busy readings (a hand over the board) count only as glimpses of hand-overs arriving
//! ([`PocketWatcher::with_glimpses`]): a hand hides pieces, it does not add them.

use std::collections::VecDeque;

use crate::engine::{BoardId, Color, Piece, Pocket, Role, Table};
use crate::rules::EventBody;

use super::look::look_changed;
use super::{PocketLook, PocketReading};

/// Consecutive readings that agree before a shortfall counts as gone (noise guard).
const CLEAR_READINGS: u32 = 3;
/// Consecutive calm readings of a changed zone before a hand-over counts as arrived by its look.
const LOOK_READINGS: u32 = 2;
/// Consecutive calm readings that must show a player's pocket short before an alert while he
/// has pressed moves not yet decided. Calm readings of a board can be seconds apart while its
/// players move, and a single one then often catches a piece lifted for a drop the tracker has
/// not decided yet.
const SHORT_READINGS: u32 = 2;
/// How long before a capture was made (its press) its zone's look is taken as "before": the
/// piece was lifted from the board before the press, and it cannot reach the partner's zone
/// before it was captured.
const BEFORE_CAPTURE_MS: u64 = 2000;
/// How long zone looks are kept.
const LOOK_HISTORY_MS: u64 = 12_000;
/// Calm readings of the receiving zone since a capture was committed before its hand-over may
/// be alerted on. A capture is often committed seconds after its press (a chain decided at a
/// later calm view) with the press's time, so its grace period may be over at once; the zone
/// must first be seen, as often as a look needs to show a piece arrived.
const HANDOVER_READINGS: u32 = LOOK_READINGS;

/// What one pocket zone looked like.
#[derive(Debug, Clone, Default)]
struct Zone {
    /// Calm looks of the last [`LOOK_HISTORY_MS`], oldest first.
    history: VecDeque<(u64, PocketLook)>,
    /// The look when the zone's content was last known to be the engine's pocket.
    settled: Option<PocketLook>,
    /// A drop from this zone was committed: the next calm reading without pending hand-overs
    /// to it that counts as many pieces as the owner holds settles it again.
    resettle: bool,
    /// Whether a calm reading since the owner last held nothing showed at least as many pieces
    /// in the zone as he held then (whatever roles it named).
    counted: bool,
    /// Every reading's counts (calm or not) of the last [`LOOK_HISTORY_MS`], oldest first.
    glimpses: VecDeque<(u64, [u8; 5])>,
}

#[derive(Debug, Clone, Copy, Default)]
struct KeyState {
    /// Since when more pieces are missing than pending hand-overs and reported hidden pieces
    /// explain.
    hidden_since: Option<u64>,
    /// Hidden pieces already reported (and still missing).
    reported_hidden: u8,
    /// Consecutive readings showing fewer missing pieces than pending hand-overs.
    arrived_run: u32,
    /// Consecutive readings without an unexplained shortfall.
    clear_run: u32,
    /// Consecutive readings showing fewer missing pieces than were reported hidden.
    back_run: u32,
    /// Consecutive readings showing the pocket short (beyond the undecided moves' excuse).
    short_run: u32,
    /// The visible count as last confirmed by `CLEAR_READINGS` agreeing readings.
    seen: Option<u8>,
    /// A different visible count and how many consecutive readings showed it.
    change: (u8, u32),
    /// Whether the reader has shown a piece of this role in the zone since the engine last held
    /// none: where it never has (a blind spot, or pieces the tracker credited wrongly), an empty
    /// reading is no evidence that a piece went.
    shown: bool,
}

#[derive(Debug, Clone, Copy)]
struct Handover {
    from: BoardId,
    color: Color,
    role: Role,
    /// When the capture was made (reported as `captured_ts`).
    captured_ts: u64,
    /// When the capture was committed: its grace period runs from then.
    committed_ts: u64,
    reported: bool,
    /// Whether its absence may be alerted on (not when the capture was only guessed).
    alertable: bool,
    /// The receiving zone's look from before the capture (when known).
    before: Option<(u64, PocketLook)>,
    /// Consecutive calm readings in which the zone's look differed from `before`.
    changed_run: u32,
    /// Calm readings of the receiving zone since the capture was committed.
    readings: u32,
    /// Whether enough consecutive readings of the receiving zone, calm or not, since the
    /// capture was made showed its piece arrive ([`PocketWatcher::with_glimpses`]).
    seen_arriving: bool,
    /// The current run of such readings.
    glimpse_run: u32,
    /// Whether the zone's readings from before the commit were counted.
    glimpses_counted: bool,
}

/// Compares pocket readings with the engine's pockets and raises pocket alerts.
///
/// Per board, colour and role, the shortfall (held minus visible) is explained first by pending
/// hand-overs (pieces captured on the other board, oldest first), then by hidden pieces. A
/// hand-over still pending after the grace period is `handover_missing` (once per piece); a
/// further shortfall that persists for the grace period is `hidden_pocket` (once per piece).
#[derive(Debug, Clone)]
pub struct PocketWatcher {
    grace_ms: u64,
    /// Grey levels a zone's block may move and still count as unchanged (0: looks unused).
    look_levels: f32,
    /// Per board, colour, pocket role.
    keys: [[[KeyState; 5]; 2]; 2],
    /// Per board, colour.
    zones: [[Zone; 2]; 2],
    pending: Vec<Handover>,
    /// Consecutive readings that show a hand-over arrived (0: off;
    /// [`with_glimpses`](Self::with_glimpses)).
    glimpses: u32,
    /// Undecided moves excuse as many missing pieces (else they only ask for confirmation).
    excuse_undecided: bool,
    /// Missing pieces are judged by the zone's total too ([`judging_totals`](Self::judging_totals)).
    totals: bool,
    /// Per board, colour and pocket role: pieces the board's latest view shows where its
    /// position has none ([`on_board_view`](Self::on_board_view)).
    on_board: [[[u8; 5]; 2]; 2],
    /// Whether [`on_partner_undecided`](Self::on_partner_undecided)'s counts are used.
    partner_arrivals: bool,
    /// Per board and colour: moves the player who feeds that pocket (the partner, on the other
    /// board) has pressed but the tracker not yet decided.
    partner_undecided: [[u8; 2]; 2],
}

impl PocketWatcher {
    /// A watcher that waits `grace_ms` before any alert.
    pub fn new(grace_ms: u64) -> PocketWatcher {
        PocketWatcher {
            grace_ms,
            look_levels: 0.0,
            keys: Default::default(),
            zones: Default::default(),
            pending: Vec::new(),
            glimpses: 0,
            excuse_undecided: false,
            totals: false,
            on_board: Default::default(),
            partner_arrivals: false,
            partner_undecided: Default::default(),
        }
    }

    /// Judging totals, lets each undecided move of the partner's take one piece the zone shows
    /// beyond its owner's holding as an arrival the engine does not know of yet
    /// ([`on_partner_undecided`](Self::on_partner_undecided)).
    pub fn counting_partner_arrivals(mut self, on: bool) -> PocketWatcher {
        self.partner_arrivals = on;
        self
    }

    /// Per colour, the moves pressed but undecided on the other board by the player who feeds
    /// that colour's pocket on `board` (his partner, who plays the other colour there): each
    /// may be a capture whose piece already reached the pocket.
    pub fn on_partner_undecided(&mut self, board: BoardId, moves: [u8; 2]) {
        self.partner_undecided[board.index()] = moves;
    }

    /// Lets each undecided move of a player excuse one missing piece of his outright.
    pub fn excusing_undecided(mut self, excuse: bool) -> PocketWatcher {
        self.excuse_undecided = excuse;
        self
    }

    /// With `totals`, a piece is hidden only while the zone shows fewer pieces in all than its
    /// owner holds (beyond the hand-overs on their way), so a role the reader misnames is not a
    /// hidden piece; a role it never named there may still be hidden once the zone was seen
    /// to hold all the owner's pieces (where per role only a role once shown may be); and no
    /// hand-over is missing while the zone shows as many pieces as its owner holds.
    pub fn judging_totals(mut self, totals: bool) -> PocketWatcher {
        self.totals = totals;
        self
    }

    /// Takes a hand-over as seen arriving once `readings` consecutive readings of the receiving
    /// zone since the capture, calm or not ([`on_glimpse`](Self::on_glimpse)), showed all the
    /// pieces of its role the owner holds (and, judging totals, as many pieces in all); 0: off.
    /// A board in a fast game is rarely calm, and a piece that arrived and went into the
    /// player's hand before a calm reading passed for a hand-over never made. Such a hand-over
    /// whose piece is missing later is reported `hidden_pocket`, not `handover_missing`; one
    /// already reported missing and then seen arriving is no longer pending. A hand over the
    /// zone hides pieces rather than adding them, so busy readings still show an arrival;
    /// they do not count for anything else (they would report every covered piece missing).
    pub fn with_glimpses(mut self, readings: u32) -> PocketWatcher {
        self.glimpses = readings;
        self
    }

    /// Also uses the zones' looks, with `levels` grey levels of tolerance (0: off).
    pub fn with_looks(mut self, levels: f32) -> PocketWatcher {
        self.look_levels = levels;
        self
    }

    /// `board`'s latest view shows these pieces (per colour and pocket role) on squares where
    /// its tracked position has none: pieces dropped in a move the tracker took for another.
    /// Until a view no longer shows them, each explains one piece its owner's pocket is short
    /// beyond the hand-overs on their way, which then is not hidden (hand-overs are judged
    /// as before).
    pub fn on_board_view(&mut self, board: BoardId, shown: [[u8; 5]; 2]) {
        self.on_board[board.index()] = shown;
    }

    /// A piece left `from` (captured): it must appear in `piece.color`'s pocket on the other
    /// board. `made` is when the capture was made (its clock press): the receiving zone's look
    /// from before then is what an arrival is seen against. `ts` is when it was committed, often
    /// seconds later (a chain decided at a later view): the grace period runs from then.
    pub fn on_capture(&mut self, from: BoardId, piece: Piece, made: u64, ts: u64) {
        self.capture(from, piece, made, ts, true);
    }

    /// As [`PocketWatcher::on_capture`] for a capture the tracker only guessed
    /// ([`crate::rules::MoveReading::guess`]): the hand-over is expected (it explains a short
    /// pocket) but its absence raises no `handover_missing`, since the capture may not have
    /// happened.
    pub fn on_guessed_capture(&mut self, from: BoardId, piece: Piece, made: u64, ts: u64) {
        self.capture(from, piece, made, ts, false);
    }

    fn capture(&mut self, from: BoardId, piece: Piece, made: u64, ts: u64, alertable: bool) {
        if piece.role != Role::King {
            let made = made.min(ts);
            let zone = &self.zones[from.other().index()][piece.color.index()];
            let before = zone
                .history
                .iter()
                .rev()
                .find(|(t, _)| t + BEFORE_CAPTURE_MS <= made)
                .copied();
            self.pending.push(Handover {
                from,
                color: piece.color,
                role: piece.role,
                captured_ts: made,
                committed_ts: ts,
                reported: false,
                alertable,
                before,
                changed_run: 0,
                readings: 0,
                seen_arriving: false,
                glimpse_run: 0,
                glimpses_counted: false,
            });
        }
    }

    /// A capture on `from` was retracted (a misread move): the newest pending hand-over of
    /// `piece` from there never happened. (One already seen arriving is gone; the pocket
    /// readings settle that count.)
    pub fn on_capture_retracted(&mut self, from: BoardId, piece: Piece) {
        if let Some(i) = self
            .pending
            .iter()
            .rposition(|h| h.from == from && h.color == piece.color && h.role == piece.role)
        {
            self.pending.remove(i);
        }
    }

    /// A piece of `color` and `role` was dropped on `board` (committed at `ts`); `held` is the
    /// engine's count of such pieces in that pocket after the drop (pieces on their way
    /// included). When the pieces there before the pending hand-overs could not have supplied
    /// the drop, one of those hand-overs evidently happened. The zone changed by the drop, so
    /// its look no longer shows what arrived since before a capture.
    pub fn on_drop(&mut self, board: BoardId, color: Color, role: Role, held: u8, ts: u64) {
        let to_zone = |h: &Handover| h.from == board.other() && h.color == color;
        let pending = self
            .pending
            .iter()
            .filter(|h| to_zone(h) && h.role == role)
            .count();
        // Before the drop `held + 1` were counted; none of them was there but the pending ones.
        if pending > usize::from(held)
            && let Some(i) = self
                .pending
                .iter()
                .position(|h| to_zone(h) && h.role == role)
        {
            self.pending.remove(i);
        }
        for h in self.pending.iter_mut().filter(|h| to_zone(h)) {
            if h.before.is_some_and(|(t, _)| t < ts) {
                h.before = None;
            }
        }
        let zone = &mut self.zones[board.index()][color.index()];
        zone.settled = None;
        zone.resettle = true;
    }

    /// Pieces captured on the other board and not yet seen in `board`'s pockets, per colour and
    /// role.
    pub fn in_transit(&self, board: BoardId) -> [[u8; 5]; 2] {
        in_transit(&self.pending, board)
    }

    /// Pending hand-overs to `board` (for tests and tools).
    pub fn pending(&self, board: BoardId) -> usize {
        self.pending
            .iter()
            .filter(|h| h.from == board.other())
            .count()
    }

    /// Any reading of `board`'s pockets at `ts`, calm or not: what it shows of the pending
    /// hand-overs' pieces ([`with_glimpses`](Self::with_glimpses)).
    pub fn on_glimpse(&mut self, board: BoardId, ts: u64, reading: &PocketReading, table: &Table) {
        if self.glimpses == 0 {
            return;
        }
        for color in Color::ALL {
            if !reading.in_view(color) {
                continue;
            }
            let zone = &mut self.zones[board.index()][color.index()];
            zone.glimpses.push_back((ts, reading.counts[color.index()]));
            while zone
                .glimpses
                .front()
                .is_some_and(|(t, _)| t + LOOK_HISTORY_MS < ts)
            {
                zone.glimpses.pop_front();
            }
            let pocket = table.board(board).pocket(color);
            let held_all = total(|r| pocket.count(r));
            let (totals, glimpses) = (self.totals, self.glimpses);
            for h in self
                .pending
                .iter_mut()
                .filter(|h| h.from == board.other() && h.color == color)
            {
                let held = pocket.count(h.role);
                // As many of its role as held, and as many pieces in all: a reading that names
                // another piece of the zone as this role shows no arrival.
                let shows = |counts: &[u8; 5]| {
                    held > 0
                        && counts[h.role.index()] >= held
                        && (!totals || total(|r| counts[r.index()]) >= held_all)
                };
                let mut glimpse = |shown: bool| {
                    h.glimpse_run = if shown { h.glimpse_run + 1 } else { 0 };
                    h.seen_arriving |= h.glimpse_run >= glimpses;
                };
                if h.glimpses_counted {
                    glimpse(shows(&reading.counts[color.index()]));
                } else {
                    // The readings since the capture was made, this one included.
                    for (_, c) in zone.glimpses.iter().filter(|(t, _)| *t >= h.captured_ts) {
                        glimpse(shows(c));
                    }
                    h.glimpses_counted = true;
                }
            }
            // A hand-over already reported missing that is seen arriving has arrived, late: a
            // shortfall after that is a hidden piece. (One not yet reported stays pending: a
            // drop the tracker has not committed yet may take it away again, and its absence
            // is then reported as hidden by `on_reading`.)
            self.pending.retain(|h| {
                !(h.from == board.other() && h.color == color && h.reported && h.seen_arriving)
            });
        }
    }

    /// One reading of `board`'s pockets at `ts`, of which only the zones `readable` marks count
    /// (a hand in or over a zone hides what it holds; a reader unsure of a zone may misread
    /// it); returns the alerts it completes.
    /// `undecided` counts per colour the moves pressed but not yet committed: each may be a drop
    /// the pocket already shows. A player with undecided moves is alerted on only when
    /// `SHORT_READINGS` readings in a row show his pocket short; with
    /// [`excusing_undecided`](Self::excusing_undecided), that many missing pieces of his raise
    /// nothing at all (the reading still updates what the watcher knows).
    pub fn on_reading(
        &mut self,
        board: BoardId,
        ts: u64,
        reading: &PocketReading,
        readable: [bool; 2],
        table: &Table,
        undecided: [u8; 2],
    ) -> Vec<EventBody> {
        let mut out = Vec::new();
        for color in Color::ALL {
            // A zone the camera does not see whole shows nothing missing.
            if !reading.in_view(color) || !readable[color.index()] {
                continue;
            }
            let look = reading
                .looks
                .filter(|_| self.look_levels > 0.0)
                .map(|l| l[color.index()]);
            let untouched = look.is_some_and(|l| self.zone_look(board, color, ts, &l));
            for h in self
                .pending
                .iter_mut()
                .filter(|h| h.from == board.other() && h.color == color)
            {
                h.readings += 1;
            }
            let waiting = undecided[color.index()];
            let mut excuses = if self.excuse_undecided { waiting } else { 0 };
            let pocket = table.board(board).pocket(color);
            let held_all = total(|r| pocket.count(r));
            let visible_all = total(|r| reading.count(color, r));
            let zone = &mut self.zones[board.index()][color.index()];
            if held_all == 0 {
                zone.counted = false;
            } else if visible_all >= held_all {
                zone.counted = true;
            }
            let counted_all = self.totals && zone.counted;
            // The zone shows as many pieces as its owner holds: whatever roles the reader
            // names, nothing is missing from it, so no hand-over is alerted on.
            let complete = self.totals && visible_all >= held_all;
            // Pieces already taken as hidden by the roles before this one.
            let mut hidden_before = 0u8;
            let mut all_there = true;
            for role in Role::POCKET {
                let held = pocket.count(role);
                let visible = reading.count(color, role);
                let short = held.saturating_sub(visible);
                all_there &= short == 0;
                let is_key =
                    |h: &Handover| h.from == board.other() && h.color == color && h.role == role;
                let pending = self.pending.iter().filter(|h| is_key(h)).count() as u8;
                let key = &mut self.keys[board.index()][color.index()][role.index()];
                // Pieces appearing in the pocket are hand-overs arriving (the oldest first),
                // even while the pocket stays short: a piece hidden before the capture must
                // not pass for the capture's missing hand-over.
                let mut arrived = 0u8;
                let seen = *key.seen.get_or_insert(visible);
                if visible == seen {
                    key.change = (visible, 0);
                } else {
                    key.change = if key.change.0 == visible {
                        (visible, key.change.1 + 1)
                    } else {
                        (visible, 1)
                    };
                    if key.change.1 >= CLEAR_READINGS {
                        arrived = visible.saturating_sub(seen).min(pending);
                        key.seen = Some(visible);
                        key.change = (visible, 0);
                    }
                }
                remove_oldest(&mut self.pending, arrived, is_key);
                let pending = pending - arrived;
                key.shown = (key.shown && held > 0) || visible > 0;
                // Fewer missing than pending: the oldest hand-overs arrived. At once when the
                // confirmed count agrees: the piece can reach the pocket before its capture is
                // committed, and the readings that confirmed it then came before the capture.
                if short < pending {
                    key.arrived_run += 1;
                    let short_seen = held.saturating_sub(key.seen.unwrap_or(visible));
                    let n = if key.arrived_run >= CLEAR_READINGS {
                        pending - short
                    } else {
                        pending.saturating_sub(short.max(short_seen))
                    };
                    remove_oldest(&mut self.pending, n, is_key);
                } else {
                    key.arrived_run = 0;
                }
                let piece = Piece { color, role }.char().to_string();
                // Overdue hand-overs, each reported once, while the pocket is still short
                // by more than the undecided moves may have dropped.
                let excused = excuses.min(short);
                excuses -= excused;
                key.short_run = if short > excused {
                    key.short_run + 1
                } else {
                    0
                };
                let confirmed = waiting == 0 || key.short_run >= SHORT_READINGS;
                let mut unexplained = short;
                for h in self.pending.iter_mut().filter(|h| is_key(h)) {
                    if unexplained == 0 {
                        break;
                    }
                    // Only the shortfall beyond `excused` is alerted on.
                    let alertable = unexplained > excused;
                    unexplained -= 1;
                    if alertable
                        && h.alertable
                        && !complete
                        && confirmed
                        && !h.reported
                        && h.readings >= HANDOVER_READINGS
                        && ts.saturating_sub(h.committed_ts) >= self.grace_ms
                    {
                        h.reported = true;
                        // Seen arriving: the partner has had it, and now it is gone.
                        out.push(if h.seen_arriving {
                            EventBody::HiddenPocket {
                                color,
                                piece: piece.clone(),
                                held,
                                visible,
                            }
                        } else {
                            EventBody::HandoverMissing {
                                from_board: h.from,
                                color,
                                piece: piece.clone(),
                                captured_ts: h.captured_ts,
                            }
                        });
                    }
                }
                // What pending hand-overs (and, judging totals, the zone's total) do not
                // explain is hidden, unless the zone looks as it did when its content was known
                // (then the reader misreads it), or unless the reader never showed this role
                // there (`shown`) nor all the owner's pieces (`counted_all`).
                // A piece of this role standing on the board where the position has none
                // (`on_board_view`) is a drop taken for another move, not a hidden piece.
                unexplained = unexplained
                    .saturating_sub(self.on_board[board.index()][color.index()][role.index()]);
                let hidden = if self.totals && unexplained > 0 {
                    // What the zone's total leaves missing beyond the hand-overs on their way
                    // (each explains a missing piece of its own role only).
                    let coming = coming(&self.pending, board, color, pocket, reading);
                    // Pieces of the partner's undecided captures raise the total the zone
                    // should show; only pieces read beyond a role's holding can be such.
                    let arriving = if self.partner_arrivals {
                        let beyond =
                            total(|r| reading.count(color, r).saturating_sub(pocket.count(r)));
                        beyond.min(self.partner_undecided[board.index()][color.index()])
                    } else {
                        0
                    };
                    let room = held_all
                        .saturating_add(arriving)
                        .saturating_sub(visible_all)
                        .saturating_sub(coming);
                    unexplained.min(room.saturating_sub(hidden_before))
                } else {
                    unexplained
                };
                hidden_before = hidden_before.saturating_add(hidden);
                if hidden > key.reported_hidden && !untouched {
                    key.clear_run = 0;
                    let since = *key.hidden_since.get_or_insert(ts);
                    if (key.shown || counted_all)
                        && hidden.saturating_sub(excused) > key.reported_hidden
                        && confirmed
                        && ts.saturating_sub(since) >= self.grace_ms
                    {
                        key.reported_hidden = hidden;
                        key.hidden_since = None;
                        out.push(EventBody::HiddenPocket {
                            color,
                            piece,
                            held,
                            visible,
                        });
                    }
                } else {
                    key.clear_run += 1;
                    if key.clear_run >= CLEAR_READINGS || untouched {
                        key.hidden_since = None;
                    }
                    // A reported piece counts as back only when the pocket shows it (`short`),
                    // not when a hand-over on its way explains the shortfall, and only in
                    // `CLEAR_READINGS` readings in a row: one noisy reading that shows it must
                    // not make the same piece an alert again.
                    if short < key.reported_hidden {
                        key.back_run += 1;
                        if key.back_run >= CLEAR_READINGS || untouched {
                            key.reported_hidden = short;
                            key.back_run = 0;
                        }
                    } else {
                        key.back_run = 0;
                    }
                }
            }
            // The content is known again: the reader sees all of it, or a drop has settled and
            // the zone counts whole. Not on the drop's look alone: the hand that dropped may
            // have kept another piece, and the zone would then pass for holding it
            // (`el-low-g43`, `docs/tracker.md`).
            if let Some(l) = look {
                let zone = &mut self.zones[board.index()][color.index()];
                let waiting = self
                    .pending
                    .iter()
                    .any(|h| h.from == board.other() && h.color == color);
                let whole = visible_all >= held_all;
                if !waiting && (all_there || (zone.resettle && whole)) {
                    zone.settled = Some(l);
                    zone.resettle = false;
                }
            }
        }
        out
    }

    /// Keeps `look` (a calm reading of `board`'s `color` zone at `ts`) in the zone's history,
    /// counts pending hand-overs to the zone as arrived once the zone changed since before their
    /// capture, and tells whether the zone looks as it did when its content was last known.
    fn zone_look(&mut self, board: BoardId, color: Color, ts: u64, look: &PocketLook) -> bool {
        let levels = self.look_levels;
        let zone = &mut self.zones[board.index()][color.index()];
        zone.history.push_back((ts, *look));
        while zone
            .history
            .front()
            .is_some_and(|(t, _)| t + LOOK_HISTORY_MS < ts)
        {
            zone.history.pop_front();
        }
        let mut arrived = false;
        self.pending.retain_mut(|h| {
            if h.from != board.other() || h.color != color {
                return true;
            }
            match h.before {
                Some((_, before)) if look_changed(&before, look, levels) => h.changed_run += 1,
                _ => h.changed_run = 0,
            }
            let here = h.changed_run >= LOOK_READINGS;
            arrived |= here;
            !here
        });
        if arrived {
            zone.settled = Some(*look);
            zone.resettle = false;
        }
        zone.settled
            .is_some_and(|s| !look_changed(&s, look, levels))
    }
}

/// Pending hand-overs to `board`, per colour and role.
fn in_transit(pending: &[Handover], board: BoardId) -> [[u8; 5]; 2] {
    let mut out = [[0u8; 5]; 2];
    for h in pending.iter().filter(|h| h.from == board.other()) {
        let n = &mut out[h.color.index()][h.role.index()];
        *n = n.saturating_add(1);
    }
    out
}

/// Missing pieces of `board`'s `color` zone that hand-overs on their way explain: per role, as
/// many as are both missing and coming.
fn coming(
    pending: &[Handover],
    board: BoardId,
    color: Color,
    pocket: &Pocket,
    reading: &PocketReading,
) -> u8 {
    let on_way = in_transit(pending, board)[color.index()];
    Role::POCKET
        .iter()
        .map(|&role| {
            let missing = pocket
                .count(role)
                .saturating_sub(reading.count(color, role));
            missing.min(on_way[role.index()])
        })
        .fold(0, u8::saturating_add)
}

/// The sum of `count` over the droppable roles (saturating: a reading from outside may claim
/// any count).
fn total(count: impl Fn(Role) -> u8) -> u8 {
    Role::POCKET
        .iter()
        .fold(0u8, |n, &r| n.saturating_add(count(r)))
}

/// Removes the `n` oldest pending hand-overs that `is_key` selects (they arrived).
fn remove_oldest(pending: &mut Vec<Handover>, n: u8, is_key: impl Fn(&Handover) -> bool) {
    if n == 0 {
        return;
    }
    let mut left = n;
    pending.retain(|h| {
        if left > 0 && is_key(h) {
            left -= 1;
            false
        } else {
            true
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHITE_KNIGHT: Piece = Piece {
        color: Color::White,
        role: Role::Knight,
    };

    fn table_with_two_white_knights_in_a_pocket() -> Table {
        Table::from_fen(
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[NN] w KQkq - 0 1 | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        )
        .unwrap()
    }

    fn table_with_white_knight_in_a_pocket() -> Table {
        Table::from_fen(
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[N] w KQkq - 0 1 | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        )
        .unwrap()
    }

    fn reading(white_knights: u8) -> PocketReading {
        showing(Role::Knight, white_knights)
    }

    #[test]
    fn pieces_an_undecided_move_may_have_dropped_raise_nothing_yet() {
        // Two knights held, seen once, then none: one undecided white move may explain one of
        // them.
        let t = table_with_two_white_knights_in_a_pocket();
        let run = |undecided: [u8; 2]| {
            let mut w = PocketWatcher::new(3000).excusing_undecided(true);
            let mut events = Vec::new();
            for ts in (0..=4000).step_by(100) {
                let r = reading(if ts == 0 { 2 } else { 0 });
                events.extend(w.on_reading(BoardId::A, ts, &r, [true; 2], &t, undecided));
            }
            events
        };
        assert!(run([2, 0]).is_empty());
        assert!(matches!(
            run([1, 0]).as_slice(),
            [EventBody::HiddenPocket {
                color: Color::White,
                ..
            }]
        ));
        // Black's undecided moves excuse no white piece.
        assert_eq!(run([0, 2]).len(), 1);
    }

    #[test]
    fn a_piece_the_board_shows_is_not_hidden() {
        let t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(3000);
        // The knight is seen in the pocket, then gone; the board shows a white knight where
        // the position has none (a drop taken for another move).
        let mut events = w.on_reading(BoardId::A, 0, &reading(1), [true; 2], &t, [0; 2]);
        w.on_board_view(BoardId::A, [[0, 1, 0, 0, 0], [0; 5]]);
        for ts in (100..=5000).step_by(100) {
            events.extend(w.on_reading(BoardId::A, ts, &reading(0), [true; 2], &t, [0; 2]));
        }
        assert!(events.is_empty(), "{events:?}");
        // A black knight, or the other board's, explains nothing; once the board no longer
        // shows it, the grace period runs and the knight is hidden.
        w.on_board_view(BoardId::A, [[0; 5], [0, 1, 0, 0, 0]]);
        w.on_board_view(BoardId::B, [[0, 1, 0, 0, 0], [0; 5]]);
        for ts in (5100..=8000).step_by(100) {
            events.extend(w.on_reading(BoardId::A, ts, &reading(0), [true; 2], &t, [0; 2]));
        }
        assert!(events.is_empty(), "{events:?}");
        events.extend(w.on_reading(BoardId::A, 8100, &reading(0), [true; 2], &t, [0; 2]));
        assert!(matches!(
            events.as_slice(),
            [EventBody::HiddenPocket { color: Color::White, piece, .. }] if piece == "N"
        ));
    }

    #[test]
    fn hidden_pocket_only_after_the_grace_period() {
        let t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(3000);
        // The knight is seen in the pocket, then gone from 100 ms on.
        let mut events = w.on_reading(BoardId::A, 0, &reading(1), [true; 2], &t, [0; 2]);
        for ts in (100..=3000).step_by(100) {
            events.extend(w.on_reading(BoardId::A, ts, &reading(0), [true; 2], &t, [0; 2]));
        }
        assert!(events.is_empty(), "{events:?}");
        events.extend(w.on_reading(BoardId::A, 3100, &reading(0), [true; 2], &t, [0; 2]));
        assert!(matches!(
            events.as_slice(),
            [EventBody::HiddenPocket { held: 1, visible: 0, color: Color::White, piece }] if piece == "N"
        ));
        // Raised once, not every reading.
        assert!(
            w.on_reading(BoardId::A, 3200, &reading(0), [true; 2], &t, [0; 2])
                .is_empty()
        );
    }

    /// Whether `events` is exactly one `hidden_pocket` with these counts.
    fn one_hidden(events: &[EventBody], held: u8, visible: u8) -> bool {
        matches!(events, [EventBody::HiddenPocket { held: h, visible: v, .. }] if *h == held && *v == visible)
    }

    #[test]
    fn a_piece_the_reader_never_showed_in_the_zone_is_not_reported_hidden() {
        // Issue 6, 50-s renders: most `hidden_pocket` alerts were for pieces the pocket reader
        // never counted in that zone (a zone it reads blind, or a capture the tracker got
        // wrong), so their absence said nothing.
        let t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(1000);
        let mut events = Vec::new();
        for ts in (0..=5000).step_by(100) {
            events.extend(w.on_reading(BoardId::A, ts, &reading(0), [true; 2], &t, [0; 2]));
        }
        assert!(events.is_empty(), "{events:?}");
        // Once it has been seen there, its absence counts.
        events.extend(w.on_reading(BoardId::A, 5100, &reading(1), [true; 2], &t, [0; 2]));
        for ts in (5200..=7000).step_by(100) {
            events.extend(w.on_reading(BoardId::A, ts, &reading(0), [true; 2], &t, [0; 2]));
        }
        assert!(one_hidden(&events, 1, 0), "{events:?}");
    }

    /// A reading of White's zone on board A showing `n` pieces of `role`.
    fn showing(role: Role, n: u8) -> PocketReading {
        let mut r = PocketReading::default();
        r.counts[0][role.index()] = n;
        r
    }

    /// Feeds `reading(ts)` every 100 ms from `from` to `to` and collects the events.
    fn feed(
        w: &mut PocketWatcher,
        t: &Table,
        from: u64,
        to: u64,
        reading: impl Fn(u64) -> PocketReading,
    ) -> Vec<EventBody> {
        (from..=to)
            .step_by(100)
            .flat_map(|ts| w.on_reading(BoardId::A, ts, &reading(ts), [true; 2], t, [0; 2]))
            .collect()
    }

    #[test]
    fn judging_totals_a_misnamed_piece_is_not_hidden() {
        // The reader names the held knight once, then reads it as a pawn for good: per role the
        // knight is missing; the zone still shows one piece of one held.
        let t = table_with_white_knight_in_a_pocket();
        let misnamed = |ts: u64| {
            if ts == 0 {
                showing(Role::Knight, 1)
            } else {
                showing(Role::Pawn, 1)
            }
        };
        let mut per_role = PocketWatcher::new(1000);
        let events = feed(&mut per_role, &t, 0, 3000, misnamed);
        assert!(one_hidden(&events, 1, 0), "{events:?}");
        let mut totals = PocketWatcher::new(1000).judging_totals(true);
        let events = feed(&mut totals, &t, 0, 3000, misnamed);
        assert!(events.is_empty(), "{events:?}");
        // When the zone's total falls short too, the knight is hidden.
        let events = feed(&mut totals, &t, 3100, 6000, |_| showing(Role::Pawn, 0));
        assert!(one_hidden(&events, 1, 0), "{events:?}");
    }

    #[test]
    fn judging_totals_an_arrival_of_the_partners_undecided_capture_does_not_mask_a_hidden_piece() {
        // The held knight shows, then goes into the hand just as a pawn from a capture the
        // tracker has not decided yet on the other board arrives: one piece shown of one held.
        let t = table_with_white_knight_in_a_pocket();
        let swapped = |ts: u64| {
            if ts < 1000 {
                showing(Role::Knight, 1)
            } else {
                showing(Role::Pawn, 1)
            }
        };
        let watcher = |arrivals: bool, undecided: u8| {
            let mut w = PocketWatcher::new(1000)
                .judging_totals(true)
                .counting_partner_arrivals(arrivals);
            // White's pocket on board A is fed by Black on board B.
            w.on_partner_undecided(BoardId::A, [undecided, 0]);
            w
        };
        let events = feed(&mut watcher(true, 1), &t, 0, 4000, swapped);
        assert!(one_hidden(&events, 1, 0), "{events:?}");
        // Without the option, or with nothing undecided on the other board, the pawn passes
        // for the knight misnamed.
        for mut w in [watcher(false, 1), watcher(true, 0)] {
            let events = feed(&mut w, &t, 0, 4000, swapped);
            assert!(events.is_empty(), "{events:?}");
        }
    }

    #[test]
    fn judging_totals_a_role_never_named_may_be_hidden_once_the_zone_was_seen_whole() {
        // The reader never names the knight (a pawn, to it), but shows one piece where one is
        // held; then the zone is empty.
        let t = table_with_white_knight_in_a_pocket();
        let seen_then_gone = |ts: u64| showing(Role::Pawn, u8::from(ts < 1000));
        let mut per_role = PocketWatcher::new(1000);
        let events = feed(&mut per_role, &t, 0, 4000, seen_then_gone);
        assert!(events.is_empty(), "{events:?}");
        let mut totals = PocketWatcher::new(1000).judging_totals(true);
        let events = feed(&mut totals, &t, 0, 4000, seen_then_gone);
        assert!(one_hidden(&events, 1, 0), "{events:?}");
        // A zone never seen whole proves nothing.
        let mut blind = PocketWatcher::new(1000).judging_totals(true);
        let events = feed(&mut blind, &t, 0, 4000, |_| showing(Role::Pawn, 0));
        assert!(events.is_empty(), "{events:?}");
    }

    #[test]
    fn judging_totals_absurd_counts_do_not_overflow() {
        // A reading from outside (a JSON observation) may claim 255 of every role.
        let t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(1000).judging_totals(true);
        let absurd = PocketReading {
            counts: [[u8::MAX; 5]; 2],
            ..PocketReading::default()
        };
        let events = feed(&mut w, &t, 0, 2000, |_| absurd);
        assert!(events.is_empty(), "{events:?}");
    }

    #[test]
    fn a_reported_hidden_piece_is_not_reported_again_when_a_hand_over_arrives() {
        // Regression (issue 6, `eval tracker-sim --clock` per_game 2): a wrongly committed move
        // left the engine one knight more than the pocket shows. That shortfall is reported
        // once; while a second knight was on its way the pending hand-over "explained" the
        // shortfall, the report was forgotten, and the knight's arrival re-raised it.
        let mut t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(1000);
        let mut events = Vec::new();
        for ts in (0..=1500).step_by(100) {
            let r = reading(u8::from(ts == 0));
            events.extend(w.on_reading(BoardId::A, ts, &r, [true; 2], &t, [0; 2]));
        }
        assert_eq!(events.len(), 1, "{events:?}");
        // Board B captures a white knight: the engine now holds two, the pocket shows none yet.
        t = table_with_two_white_knights_in_a_pocket();
        w.on_capture(BoardId::B, WHITE_KNIGHT, 1600, 1600);
        let mut later = Vec::new();
        for ts in (1600..=2000).step_by(100) {
            later.extend(w.on_reading(BoardId::A, ts, &reading(0), [true; 2], &t, [0; 2]));
        }
        // It arrives: one knight visible of the two the engine counts, as before the capture.
        for ts in (2100..=8000).step_by(100) {
            later.extend(w.on_reading(BoardId::A, ts, &reading(1), [true; 2], &t, [0; 2]));
        }
        assert!(later.is_empty(), "{later:?}");
        assert_eq!(w.pending(BoardId::A), 0);
    }

    #[test]
    fn one_noisy_reading_does_not_clear_the_shortfall() {
        let t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(1000);
        let mut events = Vec::new();
        for ts in (0..=1000).step_by(100) {
            let r = if ts == 500 { reading(1) } else { reading(0) };
            events.extend(w.on_reading(BoardId::A, ts, &r, [true; 2], &t, [0; 2]));
        }
        assert_eq!(events.len(), 1, "{events:?}");
    }

    #[test]
    fn a_reported_hidden_piece_seen_in_one_noisy_reading_is_not_reported_again() {
        // Regression (issue 6, `eval tracker-sim --clock` game 2): one reading in which the
        // reader's noise showed the hidden bishop counted it as back, and the next ones reported
        // it again, every ten seconds or so.
        let t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(1000);
        let mut events = Vec::new();
        for ts in (0..=10_000).step_by(100) {
            let r = if ts % 3000 == 2000 {
                reading(1)
            } else {
                reading(0)
            };
            events.extend(w.on_reading(BoardId::A, ts, &r, [true; 2], &t, [0; 2]));
        }
        assert_eq!(events.len(), 1, "{events:?}");
        // Shown for three readings in a row, it is back; hidden again, it is reported again.
        for ts in (10_100..=10_300).step_by(100) {
            events.extend(w.on_reading(BoardId::A, ts, &reading(1), [true; 2], &t, [0; 2]));
        }
        for ts in (10_400..=12_000).step_by(100) {
            events.extend(w.on_reading(BoardId::A, ts, &reading(0), [true; 2], &t, [0; 2]));
        }
        assert_eq!(events.len(), 2, "{events:?}");
    }

    #[test]
    fn a_visible_pocket_raises_nothing() {
        let t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(1000);
        for ts in (0..=5000).step_by(100) {
            assert!(
                w.on_reading(BoardId::A, ts, &reading(1), [true; 2], &t, [0; 2])
                    .is_empty()
            );
        }
    }

    #[test]
    fn a_guessed_capture_expects_its_hand_over_but_raises_no_alert() {
        let t = table_with_white_knight_in_a_pocket();
        let run = |guessed: bool| {
            let mut w = PocketWatcher::new(1000);
            if guessed {
                w.on_guessed_capture(BoardId::B, WHITE_KNIGHT, 0, 0);
            } else {
                w.on_capture(BoardId::B, WHITE_KNIGHT, 0, 0);
            }
            let mut events = Vec::new();
            for ts in (100..=3000).step_by(100) {
                events.extend(w.on_reading(BoardId::A, ts, &reading(0), [true; 2], &t, [0; 2]));
            }
            (events, w.pending(BoardId::A))
        };
        let (sure, pending) = run(false);
        assert!(
            matches!(sure.as_slice(), [EventBody::HandoverMissing { .. }]),
            "{sure:?}"
        );
        assert_eq!(pending, 1);
        // The guessed capture still explains the empty pocket (no `hidden_pocket` either).
        let (guessed, pending) = run(true);
        assert!(guessed.is_empty(), "{guessed:?}");
        assert_eq!(pending, 1);
    }

    #[test]
    fn a_retracted_capture_leaves_no_hand_over_pending() {
        // A capture the tracker misread and took back never sent anything to the partner.
        let mut w = PocketWatcher::new(1000);
        w.on_capture(BoardId::B, WHITE_KNIGHT, 0, 0);
        w.on_capture(BoardId::B, WHITE_KNIGHT, 500, 500);
        w.on_capture_retracted(BoardId::B, WHITE_KNIGHT);
        assert_eq!(w.pending(BoardId::A), 1);
        // Only a hand-over of that piece from that board is dropped.
        w.on_capture_retracted(BoardId::A, WHITE_KNIGHT);
        assert_eq!(w.pending(BoardId::A), 1);
        w.on_capture_retracted(BoardId::B, WHITE_KNIGHT);
        assert_eq!(w.pending(BoardId::A), 0);
    }

    #[test]
    fn a_drop_of_a_piece_held_before_the_capture_is_no_hand_over() {
        // Regression (issue 6, `eval tracker-sim --incident-rate 0.1 --clock`, game 45): Black
        // held a pawn; a pawn captured for him never came, and he dropped the one he had. The
        // drop was taken for the hand-over, and the missing pawn was reported as hidden.
        let t = Table::from_fen(
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[N] w KQkq - 0 1 | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        )
        .unwrap();
        let mut w = PocketWatcher::new(1000);
        // The engine counted two knights when the capture was committed; one is dropped.
        w.on_capture(BoardId::B, WHITE_KNIGHT, 0, 0);
        w.on_drop(BoardId::A, Color::White, Role::Knight, 1, 200);
        assert_eq!(w.pending(BoardId::A), 1);
        let mut events = Vec::new();
        for ts in (300..=3000).step_by(100) {
            events.extend(w.on_reading(BoardId::A, ts, &reading(0), [true; 2], &t, [0; 2]));
        }
        assert!(
            matches!(
                events.as_slice(),
                [EventBody::HandoverMissing { captured_ts: 0, .. }]
            ),
            "{events:?}"
        );
        // Held nothing before: the dropped knight must be the one handed over.
        let mut w = PocketWatcher::new(1000);
        w.on_capture(BoardId::B, WHITE_KNIGHT, 0, 0);
        w.on_drop(BoardId::A, Color::White, Role::Knight, 0, 200);
        assert_eq!(w.pending(BoardId::A), 0);
    }

    #[test]
    fn a_zone_out_of_view_raises_nothing() {
        // As `a_capture_never_handed_over_is_handover_missing`, and a piece hidden from the
        // other zone, but neither zone is in view: the knight may lie in the part not seen.
        let t = Table::from_fen(
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[Nq] w KQkq - 0 1 | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        )
        .unwrap();
        for (out_of_view, alerts) in [([true, true], 0), ([true, false], 1), ([false, false], 2)] {
            let mut w = PocketWatcher::new(1000);
            w.on_capture(BoardId::B, WHITE_KNIGHT, 0, 0);
            let r = PocketReading {
                out_of_view,
                ..reading(0)
            };
            // The black queen was seen before she went.
            let mut queen = r;
            queen.counts[1][Role::Queen.index()] = 1;
            let events: Vec<_> = (0..=5000)
                .step_by(100)
                .flat_map(|ts| {
                    let r = if ts == 0 { &queen } else { &r };
                    w.on_reading(BoardId::A, ts, r, [true; 2], &t, [0; 2])
                })
                .collect();
            assert_eq!(events.len(), alerts, "{out_of_view:?}: {events:?}");
            if alerts == 1 {
                assert!(matches!(
                    events[0],
                    EventBody::HiddenPocket {
                        color: Color::Black,
                        ..
                    }
                ));
            }
        }
    }

    #[test]
    fn a_capture_never_handed_over_is_handover_missing() {
        let t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(1000);
        w.on_capture(BoardId::B, WHITE_KNIGHT, 0, 0);
        let mut events = Vec::new();
        for ts in (0..=5000).step_by(100) {
            events.extend(w.on_reading(BoardId::A, ts, &reading(0), [true; 2], &t, [0; 2]));
        }
        // Once, and not also as a hidden piece; it stays pending until it shows up.
        assert!(
            matches!(
                events.as_slice(),
                [EventBody::HandoverMissing {
                    from_board: BoardId::B,
                    captured_ts: 0,
                    ..
                }]
            ),
            "{events:?}"
        );
        assert_eq!(w.pending(BoardId::A), 1);
        for ts in (5100..=5500).step_by(100) {
            assert!(
                w.on_reading(BoardId::A, ts, &reading(1), [true; 2], &t, [0; 2])
                    .is_empty()
            );
        }
        assert_eq!(w.pending(BoardId::A), 0);
    }

    /// The alerts for a knight captured on board B at `made` and committed at `committed`,
    /// whose zone on board A is never calm until 3 s and shows the knight in the readings
    /// `shown` (by time), nothing after.
    fn glimpsed_then_gone(
        glimpses: u32,
        [made, committed]: [u64; 2],
        shown: &[u64],
    ) -> Vec<EventBody> {
        let t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(1000).with_glimpses(glimpses);
        let mut events = Vec::new();
        for ts in (0..=6000).step_by(100) {
            if ts == committed {
                w.on_capture(BoardId::B, WHITE_KNIGHT, made, committed);
            }
            let r = reading(u8::from(shown.contains(&ts)));
            w.on_glimpse(BoardId::A, ts, &r, &t);
            let calm = ts >= 3000;
            events.extend(w.on_reading(BoardId::A, ts, &r, [calm; 2], &t, [0; 2]));
        }
        events
    }

    #[test]
    fn a_hand_over_glimpsed_arriving_then_gone_is_hidden_not_missing() {
        let hidden = |e: &[EventBody]| matches!(e, [EventBody::HiddenPocket { visible: 0, .. }]);
        let missing = |e: &[EventBody]| matches!(e, [EventBody::HandoverMissing { .. }]);
        // Shown in three readings in a row while the board was busy, then taken away.
        let seen = [500, 600, 700];
        let e = glimpsed_then_gone(3, [0, 0], &seen);
        assert!(hidden(&e), "{e:?}");
        // The same when the capture is committed only after the readings that showed it.
        let e = glimpsed_then_gone(3, [0, 1000], &seen);
        assert!(hidden(&e), "{e:?}");
        // Without glimpses only calm readings count: it never arrived.
        let e = glimpsed_then_gone(0, [0, 0], &seen);
        assert!(missing(&e), "{e:?}");
        // Readings that show it now and then, never three in a row, are noise.
        let e = glimpsed_then_gone(3, [0, 0], &[500, 600, 800, 900]);
        assert!(missing(&e), "{e:?}");
        // Readings from before the capture was made show another piece.
        let e = glimpsed_then_gone(3, [1000, 1500], &seen);
        assert!(missing(&e), "{e:?}");
    }

    #[test]
    fn a_hand_over_seen_arriving_after_it_was_reported_missing_can_then_be_hidden() {
        // Missing in the calm readings until 2 s; the knight arrives while the board is busy
        // (shown 2.5–3.0 s, the last of these readings calm), then it is gone from the calm
        // readings again: taken into the player's hand.
        let run = |glimpses: u32| {
            let t = table_with_white_knight_in_a_pocket();
            let mut w = PocketWatcher::new(1000).with_glimpses(glimpses);
            w.on_capture(BoardId::B, WHITE_KNIGHT, 0, 0);
            let mut events = Vec::new();
            for ts in (0..=7000).step_by(100) {
                let calm = !(2100..3000).contains(&ts);
                let r = reading(u8::from((2500..=3000).contains(&ts)));
                w.on_glimpse(BoardId::A, ts, &r, &t);
                events.extend(w.on_reading(BoardId::A, ts, &r, [calm; 2], &t, [0; 2]));
            }
            (events, w.pending(BoardId::A))
        };
        let (events, pending) = run(3);
        assert!(
            matches!(
                events.as_slice(),
                [
                    EventBody::HandoverMissing { .. },
                    EventBody::HiddenPocket { visible: 0, .. }
                ]
            ),
            "{events:?}"
        );
        assert_eq!(pending, 0);
        // Calm readings alone never saw it arrive: still the missing hand-over, nothing more.
        let (events, pending) = run(0);
        assert!(
            matches!(events.as_slice(), [EventBody::HandoverMissing { .. }]),
            "{events:?}"
        );
        assert_eq!(pending, 1);
    }

    #[test]
    fn judging_totals_a_glimpse_naming_another_piece_as_the_hand_over_shows_no_arrival() {
        // White holds a bishop and the knight on its way; busy readings name the bishop a
        // knight (one piece in the zone), then the calm ones show the bishop alone.
        let t = Table::from_fen(
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[BN] w KQkq - 0 1 | rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        )
        .unwrap();
        let run = |totals: bool| {
            let mut w = PocketWatcher::new(1000)
                .with_glimpses(3)
                .judging_totals(totals);
            w.on_capture(BoardId::B, WHITE_KNIGHT, 0, 0);
            let mut events = Vec::new();
            for ts in (0..=6000).step_by(100) {
                let calm = ts >= 3000;
                let r = if calm {
                    showing(Role::Bishop, 1)
                } else {
                    showing(Role::Knight, 1)
                };
                w.on_glimpse(BoardId::A, ts, &r, &t);
                events.extend(w.on_reading(BoardId::A, ts, &r, [calm; 2], &t, [0; 2]));
            }
            events
        };
        let events = run(true);
        assert!(
            matches!(events.as_slice(), [EventBody::HandoverMissing { .. }]),
            "{events:?}"
        );
        // Per role alone, the misnamed bishop passes for the knight arriving.
        let events = run(false);
        assert!(
            matches!(events.as_slice(), [EventBody::HiddenPocket { .. }]),
            "{events:?}"
        );
    }

    #[test]
    fn judging_totals_a_hand_over_read_as_another_role_is_not_missing() {
        // The captured knight reaches White's zone, where the reader names it a pawn.
        let t = table_with_white_knight_in_a_pocket();
        let run = |totals: bool, shown: PocketReading| {
            let mut w = PocketWatcher::new(1000).judging_totals(totals);
            w.on_capture(BoardId::B, WHITE_KNIGHT, 0, 0);
            feed(&mut w, &t, 0, 5000, |_| shown)
        };
        let misnamed = showing(Role::Pawn, 1);
        assert_eq!(run(false, misnamed).len(), 1);
        let events = run(true, misnamed);
        assert!(events.is_empty(), "{events:?}");
        // An empty zone still misses it.
        assert!(matches!(
            run(true, showing(Role::Pawn, 0)).as_slice(),
            [EventBody::HandoverMissing { .. }]
        ));
    }

    #[test]
    fn one_sparse_reading_while_a_move_is_undecided_reports_nothing() {
        // The board's players keep moving, so its calm readings come seconds apart; the only
        // one after the grace period shows White's pocket short while a press of White's is
        // undecided (the piece may be in his hand for that drop).
        let t = table_with_white_knight_in_a_pocket();
        let white_undecided = [1, 0];
        let mut w = PocketWatcher::new(1000);
        w.on_capture(BoardId::B, WHITE_KNIGHT, 0, 0);
        assert!(
            w.on_reading(
                BoardId::A,
                3000,
                &reading(0),
                [true; 2],
                &t,
                white_undecided
            )
            .is_empty()
        );
        // A second reading that still shows it short confirms the shortfall.
        assert!(matches!(
            w.on_reading(
                BoardId::A,
                3600,
                &reading(0),
                [true; 2],
                &t,
                white_undecided
            )
            .as_slice(),
            [EventBody::HandoverMissing { captured_ts: 0, .. }]
        ));
        // With nothing undecided, or only Black's moves, the same: a hand-over is alerted on
        // only at the second reading of its zone since the capture was committed.
        for undecided in [[0, 0], [0, 1]] {
            let mut w = PocketWatcher::new(1000);
            w.on_capture(BoardId::B, WHITE_KNIGHT, 0, 0);
            let mut alerts = |ts| {
                w.on_reading(BoardId::A, ts, &reading(0), [true; 2], &t, undecided)
                    .len()
            };
            assert_eq!((alerts(3000), alerts(3600)), (0, 1));
        }
        // The same for a hidden piece: a reading without the shortfall in between restarts
        // the count.
        let mut w = PocketWatcher::new(1000);
        let mut events = Vec::new();
        for (ts, visible) in [(0, 0), (400, 1), (3000, 0)] {
            events.extend(w.on_reading(
                BoardId::A,
                ts,
                &reading(visible),
                [true; 2],
                &t,
                white_undecided,
            ));
        }
        assert!(events.is_empty(), "{events:?}");
        assert!(matches!(
            w.on_reading(
                BoardId::A,
                3400,
                &reading(0),
                [true; 2],
                &t,
                white_undecided
            )
            .as_slice(),
            [EventBody::HiddenPocket { .. }]
        ));
    }

    #[test]
    fn a_hand_over_that_arrived_before_its_capture_was_committed_is_not_missing() {
        // The knight reaches White's pocket (three readings confirm it) before the capture on
        // B is committed; the one reading after the commit agrees, then the knight is lifted
        // for a drop the tracker has not decided yet.
        let before = Table::new();
        let t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(1000);
        for ts in [0, 200, 400] {
            w.on_reading(BoardId::A, ts, &reading(1), [true; 2], &before, [0; 2]);
        }
        w.on_capture(BoardId::B, WHITE_KNIGHT, 500, 500);
        w.on_reading(BoardId::A, 600, &reading(1), [true; 2], &t, [0; 2]);
        assert_eq!(w.pending(BoardId::A), 0);
        let mut events = Vec::new();
        for ts in (2000..=2600).step_by(200) {
            events.extend(w.on_reading(BoardId::A, ts, &reading(0), [true; 2], &t, [1, 0]));
        }
        assert!(events.is_empty(), "{events:?}");
    }

    #[test]
    fn a_piece_hidden_before_a_capture_is_hidden_not_a_missing_handover() {
        // White's knight on A vanishes from the pocket; then a white knight is captured on B
        // and handed over (the count goes 0 → 1 while two are held). The piece still missing
        // is the hidden one, not the capture's.
        let one = table_with_white_knight_in_a_pocket();
        let two = table_with_two_white_knights_in_a_pocket();
        let mut w = PocketWatcher::new(3000);
        let mut events = Vec::new();
        for ts in (0..=6000).step_by(100) {
            if ts == 800 {
                w.on_capture(BoardId::B, WHITE_KNIGHT, ts, ts);
            }
            let (t, visible) = match ts {
                0..800 => (&one, 0),
                800..1500 => (&two, 0),
                _ => (&two, 1),
            };
            events.extend(w.on_reading(BoardId::A, ts, &reading(visible), [true; 2], t, [0; 2]));
        }
        assert!(
            matches!(
                events.as_slice(),
                [EventBody::HiddenPocket {
                    held: 2,
                    visible: 1,
                    ..
                }]
            ),
            "{events:?}"
        );
        assert_eq!(w.pending(BoardId::A), 0);
    }

    #[test]
    fn a_handover_that_arrives_clears_the_pending_capture() {
        let t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(1000);
        w.on_capture(BoardId::B, WHITE_KNIGHT, 0, 0);
        let mut events = Vec::new();
        for ts in (0..=3000).step_by(100) {
            let r = if ts < 600 { reading(0) } else { reading(1) };
            events.extend(w.on_reading(BoardId::A, ts, &r, [true; 2], &t, [0; 2]));
        }
        assert!(events.is_empty(), "{events:?}");
        assert_eq!(w.pending(BoardId::A), 0);
    }

    /// A reading of White's `knights` with both zones' looks: every block `white` (White's zone)
    /// or 100 (Black's).
    fn looking(knights: u8, white: u8) -> PocketReading {
        PocketReading {
            looks: Some([[[white; 3]; 64], [[100; 3]; 64]]),
            ..reading(knights)
        }
    }

    /// White's zone on board A as time goes: empty, and from `at` on a knight covers three of
    /// its blocks, which the reader never counts.
    fn knight_set_down_at(at: u64) -> impl Fn(u64) -> PocketReading {
        move |ts| {
            let mut r = looking(0, 60);
            if ts >= at {
                r.looks.as_mut().unwrap()[0][9..12].fill([200; 3]);
            }
            r
        }
    }

    /// With `arrived`, the hand-over to A's White zone arrived and nothing was raised; else it
    /// is reported missing, once, with `captured` as its capture's time.
    fn seen_arriving_or_missing(
        w: &PocketWatcher,
        events: &[EventBody],
        arrived: bool,
        captured: u64,
    ) {
        if arrived {
            assert!(events.is_empty(), "{events:?}");
            assert_eq!(w.pending(BoardId::A), 0);
        } else {
            assert!(
                matches!(events, [EventBody::HandoverMissing { captured_ts, .. }] if *captured_ts == captured),
                "{events:?}"
            );
        }
    }

    #[test]
    fn a_capture_committed_late_is_looked_for_before_it_is_missing() {
        // The capture's press was at 3000 and it is committed at 8000; the knight was set down
        // at 3500 and the reader never counts it.
        let before = Table::new();
        let after = table_with_white_knight_in_a_pocket();
        let zone = knight_set_down_at(3500);
        for arrived in [true, false] {
            let mut w = PocketWatcher::new(1000).with_looks(10.0);
            let mut events = Vec::new();
            for ts in (0..=11_000).step_by(200) {
                if (600..8000).contains(&ts) {
                    continue; // hands over the board
                }
                if ts == 8000 {
                    w.on_capture(BoardId::B, WHITE_KNIGHT, 3000, 8000);
                }
                let t = if ts < 8000 { &before } else { &after };
                let r = if arrived { zone(ts) } else { zone(0) };
                events.extend(w.on_reading(BoardId::A, ts, &r, [true; 2], t, [0; 2]));
                if ts == 8000 {
                    assert!(events.is_empty(), "alerted at the commit: {events:?}");
                }
            }
            seen_arriving_or_missing(&w, &events, arrived, 3000);
        }
    }

    #[test]
    fn a_capture_is_seen_arriving_against_the_zone_before_it_was_made() {
        // The capture is pressed at 2200 and committed with three more moves at 6000; the
        // knight was set down at 2500 and the reader never counts it. Dated to the commit, the
        // zone's look "before" (at 4000) already shows the knight and nothing ever arrives.
        let before = Table::new();
        let after = table_with_white_knight_in_a_pocket();
        let zone = knight_set_down_at(2500);
        for made in [2200, 6000] {
            let mut w = PocketWatcher::new(1000).with_looks(10.0);
            let mut events = Vec::new();
            for ts in (0..=11_000).step_by(200) {
                if ts == 6000 {
                    w.on_capture(BoardId::B, WHITE_KNIGHT, made, ts);
                }
                let t = if ts < 6000 { &before } else { &after };
                events.extend(w.on_reading(BoardId::A, ts, &zone(ts), [true; 2], t, [0; 2]));
            }
            seen_arriving_or_missing(&w, &events, made == 2200, made);
        }
    }

    #[test]
    fn a_handover_the_zone_shows_arrived_though_the_reader_misses_it() {
        let before = Table::new();
        let after = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(1000).with_looks(10.0);
        let mut events = Vec::new();
        // Empty zone until 2000; the knight is captured on B at 2500 (set down in A's White zone
        // at 2400), and the reader never counts it.
        for ts in (0..=8000).step_by(200) {
            if ts == 2600 {
                w.on_capture(BoardId::B, WHITE_KNIGHT, ts, ts);
            }
            let t = if ts < 2600 { &before } else { &after };
            let level = if ts < 2400 { 60 } else { 61 };
            let mut r = looking(0, level);
            if ts >= 2400 {
                // The knight covers a few blocks of the zone.
                let looks = r.looks.as_mut().unwrap();
                for block in &mut looks[0][9..12] {
                    *block = [200; 3];
                }
            }
            events.extend(w.on_reading(BoardId::A, ts, &r, [true; 2], t, [0; 2]));
        }
        assert!(events.is_empty(), "{events:?}");
        assert_eq!(w.pending(BoardId::A), 0);
    }

    #[test]
    fn a_handover_the_zone_does_not_show_is_missing_and_a_zone_emptied_hides() {
        let after = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(1000).with_looks(10.0);
        let mut events = Vec::new();
        for ts in (0..=200).step_by(200) {
            events.extend(w.on_reading(
                BoardId::A,
                ts,
                &looking(0, 60),
                [true; 2],
                &Table::new(),
                [0; 2],
            ));
        }
        w.on_capture(BoardId::B, WHITE_KNIGHT, 2400, 2400);
        for ts in (2400..=5000).step_by(200) {
            events.extend(w.on_reading(BoardId::A, ts, &looking(0, 60), [true; 2], &after, [0; 2]));
        }
        assert!(
            matches!(events.as_slice(), [EventBody::HandoverMissing { .. }]),
            "{events:?}"
        );
        // It arrives (the reader sees it), then the zone changes again and the reader misses it:
        // something was taken away, so after the grace period it is hidden.
        events.clear();
        let mut with_knight = looking(1, 60);
        for block in &mut with_knight.looks.as_mut().unwrap()[0][20..23] {
            *block = [210; 3];
        }
        for ts in (5200..=6000).step_by(200) {
            events.extend(w.on_reading(BoardId::A, ts, &with_knight, [true; 2], &after, [0; 2]));
        }
        assert_eq!(w.pending(BoardId::A), 0);
        for ts in (6200..=8000).step_by(200) {
            events.extend(w.on_reading(BoardId::A, ts, &looking(0, 60), [true; 2], &after, [0; 2]));
        }
        assert!(one_hidden(&events, 1, 0), "{events:?}");
    }

    #[test]
    fn a_piece_kept_back_at_a_drop_is_hidden() {
        // White's zone holds two knights (bright blocks); he drops one at 1000. Either his hand
        // keeps the other (the zone is empty from then on), or the other stays and the reader
        // counts it twice before it loses it in a zone that looks the same.
        let two = table_with_two_white_knights_in_a_pocket();
        let one = table_with_white_knight_in_a_pocket();
        let zone = |knights: u8, counted: u8| {
            let mut r = looking(counted, 60);
            let looks = &mut r.looks.as_mut().unwrap()[0];
            for (i, blocks) in [9..12, 20..23].into_iter().enumerate() {
                if usize::from(knights) > i {
                    looks[blocks].fill([200; 3]);
                }
            }
            r
        };
        for kept in [true, false] {
            let mut w = PocketWatcher::new(1000).with_looks(10.0);
            let mut events = Vec::new();
            for ts in (0..=400).step_by(200) {
                events.extend(w.on_reading(BoardId::A, ts, &zone(2, 2), [true; 2], &two, [0; 2]));
            }
            w.on_drop(BoardId::A, Color::White, Role::Knight, 1, 1000);
            for ts in (1200..=5000).step_by(200) {
                let r = match (kept, ts <= 1400) {
                    (true, _) => zone(0, 0),
                    (false, true) => zone(1, 1),
                    (false, false) => zone(1, 0),
                };
                events.extend(w.on_reading(BoardId::A, ts, &r, [true; 2], &one, [0; 2]));
            }
            if kept {
                assert!(one_hidden(&events, 1, 0), "{events:?}");
            } else {
                assert!(events.is_empty(), "{events:?}");
            }
        }
    }

    #[test]
    fn a_zone_that_looks_as_when_its_content_was_known_hides_nothing() {
        let t = table_with_white_knight_in_a_pocket();
        let mut w = PocketWatcher::new(1000).with_looks(10.0);
        let mut events = Vec::new();
        // Seen once with the knight, then the reader loses it while the pixels stay put (a
        // little global light change included).
        for ts in (0..=400).step_by(200) {
            events.extend(w.on_reading(BoardId::A, ts, &looking(1, 120), [true; 2], &t, [0; 2]));
        }
        for ts in (600..=6000).step_by(200) {
            events.extend(w.on_reading(BoardId::A, ts, &looking(0, 126), [true; 2], &t, [0; 2]));
        }
        assert!(events.is_empty(), "{events:?}");
        // Without looks the same readings are an alert.
        let mut plain = PocketWatcher::new(1000);
        let n: usize = (0..=6000)
            .step_by(200)
            .map(|ts| {
                let r = reading(if ts <= 400 { 1 } else { 0 });
                plain
                    .on_reading(BoardId::A, ts, &r, [true; 2], &t, [0; 2])
                    .len()
            })
            .sum();
        assert_eq!(n, 1);
    }
}
