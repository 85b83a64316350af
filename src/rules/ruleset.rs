//! Rule sets: every option in which the clubs' bughouse texts differ, as typed configuration.
//!
//! There is no official bughouse law. The five presets follow the texts in `shared/rules/`:
//! `tandem-2024` (text 000), `turnier` (001), `dsb` (002), `verein` (004) and `fics` (online play).
//! Every option's doc comment cites the paragraph it comes from. Where a text is ambiguous the option
//! has a documented default and the reason for it is written next to it (see also `docs/rules.md`).
//!
//! A rule set is plain data: load it from TOML (`preset = "dsb"` plus overrides) or pick a preset by
//! name. [`RuleSet::validate`] rejects combinations that cannot be played.

use serde::{Deserialize, Serialize};

use crate::engine::{self, MateRule, Promotion};

/// The names of the built-in presets, in the order of the rule texts.
pub const PRESETS: [&str; 5] = ["tandem-2024", "turnier", "dsb", "verein", "fics"];

/// Why a rule set could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum RuleSetError {
    #[error("unknown rule set `{0}` (known: tandem-2024, turnier, dsb, verein, fics)")]
    UnknownPreset(String),
    #[error("rule set file: {0}")]
    Toml(#[from] toml::de::Error),
    #[error("rule set `{name}`: {problem}")]
    Invalid { name: String, problem: String },
}

/// All the ways the rule texts differ. Defaults are those of `tandem-2024`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RuleSet {
    /// The preset name or a user's name for a custom set.
    pub name: String,
    /// Base time, increment, and who starts the clocks.
    /// 000 §3(1) and 001 §3(1): 5 min; 002: 3 min + 2 s; 004 §8: 5 min, the Black players start both
    /// clocks; FICS: taken from the game record.
    pub time_control: TimeControl,
    /// Ranks (1-based, inclusive, from White's side) on which a pawn may be dropped.
    /// 000 §2(1)b, 001 §2(1)b, 002 7.4, 004 §5b: ranks 2–7 everywhere.
    pub pawn_drop_ranks: (u8, u8),
    /// What happens to a pawn dropped on the first or last rank anyway. 000 §2(1)b says it "falls
    /// through"; we read that as: the drop is void, the pawn goes back to the pocket and the player
    /// moves again, with no further penalty (an option, because one may also read it as an ordinary
    /// illegal move). Every other text forbids the drop, so it is an illegal move there.
    pub back_rank_pawn_drop: BackRankPawnDrop,
    /// Whether a drop may give mate, and what happens when one does.
    /// 000 §2(1)d and 001 §2(1)d: forbidden, the piece is removed and counts as captured by the mated
    /// side, the removal is not a move; 002 7.3: forbidden, the piece is taken back; 004 §5b: allowed.
    pub drop_mate: DropMate,
    /// When a drop counts as giving mate for [`Self::drop_mate`]. 000 §2(1)e: not a drop-mate if an
    /// interposing drop would be possible, even with an empty pocket ([`MateRule::DropInterposable`]);
    /// the other texts say nothing, so the ordinary mate definition ([`Self::mate`]) applies.
    pub drop_mate_rule: MateRule,
    /// What counts as checkmate on the board. 000, 001, 002: FIDE (no legal move, drops from the pocket
    /// held now included); 004 §3a: the team wins when the opponent could avert mate only with a piece
    /// not in hand, which is the same; FICS: a check that a drop could block is never mate.
    pub mate: MateRule,
    /// How a pawn on the last rank is promoted. 000 §2(1)c, 001 §2(1)c: to the named piece (queen if
    /// none is named); 002 7.5: the pawn is treated as captured; 004 §6: the steal promotion.
    pub promotion: Promotion,
    /// A captured promoted piece goes to the partner as a pawn. 000 §2(1)c / 001 §2(1)c ("counts as the
    /// piece until it is captured"); FICS does the same. Irrelevant under 002 and 004.
    pub promoted_reverts: bool,
    /// A rook dropped on its start square counts as unmoved and may castle. 004 §5b. Not in the other
    /// texts (default off: FIDE castling needs a rook that has not moved, and a dropped rook did move).
    pub dropped_rook_castles: bool,
    /// A pawn dropped on its start rank may make the double step. 004 §5b says so explicitly; the
    /// other texts are silent, and FIDE's "a pawn on its original square" is read as allowing it too
    /// (FICS does the same), so the default is on.
    pub dropped_pawn_double_step: bool,
    /// What an illegal move costs. See [`IllegalMovePolicy`].
    pub illegal_move: IllegalMovePolicy,
    /// Stalemate. 000 §6(1)b, 001 §6b: the match is drawn when on both boards the player to move is
    /// stalemated and cannot drop; otherwise a stalemated player waits. 002 9.5: there is no stalemate,
    /// the player must drop (and waits while he cannot). 004 and FICS: no rule, the player waits.
    pub stalemate: StalemateRule,
    /// Which draws exist besides stalemate.
    pub draws: DrawRules,
    /// Touch-move. 000 §7(4), 001 §7(4): no; 002 (DSB blitz rules, 7.6): yes; 004 §7: no. Reported in
    /// events for the arbiter; the camera cannot enforce it.
    pub touch_move: bool,
    /// A move is complete only with the clock press, and may be taken back before. 004 §7 (and FIDE
    /// blitz, which the other texts adopt: 000 §7(6), 001 §7(5), 002).
    pub move_completes_on_press: bool,
    /// What hiding pieces in hand costs. 000 §7(3), 001 §7(3), 002 and 004 §5c require the pocket to
    /// stand visibly; only 004 §5c names sanctions (warning, handing the pieces over, or loss), all at
    /// the arbiter's discretion. The monitor always reports; this says what it recommends.
    pub hidden_pocket: HiddenPocketPolicy,
}

/// Base time and increment of each player's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimeControl {
    /// Seconds per player at the start; 0 means "take it from the game record" (FICS).
    pub base_secs: u32,
    pub increment_secs: u32,
    /// 004 §8: both clocks are started by the Black players at the same time.
    pub black_starts_clocks: bool,
}

impl Default for TimeControl {
    fn default() -> Self {
        Self {
            base_secs: 300,
            increment_secs: 0,
            black_starts_clocks: false,
        }
    }
}

/// See [`RuleSet::back_rank_pawn_drop`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackRankPawnDrop {
    /// An illegal move like any other.
    Illegal,
    /// 000 §2(1)b: the pawn "falls through": the drop is void and the player moves again.
    FallsThrough,
}

/// See [`RuleSet::drop_mate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropMate {
    /// 004 §5b, FICS.
    Allowed,
    /// 000 §2(1)d, 001 §2(1)d: the dropped piece is removed from the board and counts as captured by
    /// the mated side (so it goes to that side's partner); the removal is not a move, so the mated
    /// side is now to move. (Whose turn it is after the removal is not spelled out; since the drop
    /// "counts as a move" (§2(1)a) and the removal "does not", the turn passes.)
    RemovedAsCaptured,
    /// 002 7.3: the piece must be taken back: it returns to the dropper's pocket, who moves again.
    TakenBack,
}

/// What a claimed (or, where no claim is needed, an observed) illegal move costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IllegalMovePolicy {
    /// Consequence of a player's first illegal move. 000 §4(1)c: none ("bleibt folgenlos"; a claimed
    /// one is taken back, FIDE 7.5.1); 001 §4(1)c, 002 8.3, 004 §10: loss; FICS: the move is refused.
    pub first: Consequence,
    /// Consequence of the second and later ones. 000 §4(1)c: loss.
    pub repeated: Consequence,
    /// Whether the opponent must claim before the consequence applies. 000 §5(1), 001 §5(1) (a game
    /// is won when it is *claimed* won), 002 (DSB blitz rules), 004 §10, FIDE rapid A4c (text 003).
    pub needs_claim: bool,
    /// How long a claim is possible. 004 §10: until the opponent completes his next move; FIDE rapid
    /// A4c (003) says the same for the other texts ("before the claimant has made his move").
    pub claim_window: ClaimWindow,
}

impl Default for IllegalMovePolicy {
    fn default() -> Self {
        Self {
            first: Consequence::TakeBack,
            repeated: Consequence::Loss,
            needs_claim: true,
            claim_window: ClaimWindow::UntilOpponentCompletesMove,
        }
    }
}

/// What happens to the player who made an illegal move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Consequence {
    /// The move stands; nothing happens.
    None,
    /// The move stands; the arbiter warns the player.
    Warning,
    /// The position before the move is restored and the same player moves again (FIDE 7.5.1).
    TakeBack,
    /// The player's team loses.
    Loss,
    /// The move never happens (online play).
    Rejected,
}

/// See [`IllegalMovePolicy::claim_window`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimWindow {
    /// Until the claimant completes his own next move (clock press).
    UntilOpponentCompletesMove,
    /// Until the game ends.
    UntilGameEnd,
}

/// See [`RuleSet::stalemate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StalemateRule {
    /// The match is drawn when on both boards the player to move is stalemated (000 §6(1)b, 001 §6b).
    DrawIfBothBoards,
    /// The stalemated player waits for a piece to drop (002 9.5, 004, FICS).
    Wait,
}

/// Draws besides stalemate. Repetition and the 50/75-move rules never apply (000 §7(5)); they are
/// not options because no text has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DrawRules {
    /// Both teams claim a win at the same moment: 000 §6(1)a, 001 §6a.
    pub simultaneous_claims: bool,
    /// A player of each team is mated at the same time: 002 9.1, 004 §4c.
    pub simultaneous_mates: bool,
    /// A player of each team exceeded the time: 002 9.2, 004 §4b, FIDE rapid A4d.3 (003).
    pub both_flags: bool,
    /// Perpetual check on one board: 002 9.3.
    pub perpetual_check: bool,
    /// All players agree: 002 9.4, 004 §4a (and FIDE blitz for 000/001).
    pub agreement: bool,
}

impl Default for DrawRules {
    fn default() -> Self {
        Self {
            simultaneous_claims: true,
            simultaneous_mates: false,
            both_flags: false,
            perpetual_check: false,
            agreement: true,
        }
    }
}

/// See [`RuleSet::hidden_pocket`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HiddenPocketPolicy {
    /// Report to the arbiter only.
    Report,
    /// 004 §5c: warning, handing the hidden pieces to the opponent's partner, or loss, at the arbiter's
    /// discretion; the monitor recommends a warning first.
    Warning,
}

impl Default for RuleSet {
    fn default() -> Self {
        Self::tandem_2024()
    }
}

impl RuleSet {
    /// Text 000 (Tandem rules, revision B, 17 October 2024).
    pub fn tandem_2024() -> Self {
        Self {
            name: "tandem-2024".into(),
            time_control: TimeControl::default(),
            pawn_drop_ranks: (2, 7),
            back_rank_pawn_drop: BackRankPawnDrop::FallsThrough,
            drop_mate: DropMate::RemovedAsCaptured,
            drop_mate_rule: MateRule::DropInterposable,
            mate: MateRule::Standard,
            promotion: Promotion::Choose,
            promoted_reverts: true,
            dropped_rook_castles: false,
            dropped_pawn_double_step: true,
            illegal_move: IllegalMovePolicy::default(),
            stalemate: StalemateRule::DrawIfBothBoards,
            draws: DrawRules::default(),
            touch_move: false,
            move_completes_on_press: true,
            hidden_pocket: HiddenPocketPolicy::Report,
        }
    }

    /// Text 001 (Turnierregeln).
    pub fn turnier() -> Self {
        Self {
            name: "turnier".into(),
            back_rank_pawn_drop: BackRankPawnDrop::Illegal,
            drop_mate_rule: MateRule::Standard,
            illegal_move: IllegalMovePolicy {
                first: Consequence::Loss,
                ..IllegalMovePolicy::default()
            },
            ..Self::tandem_2024()
        }
    }

    /// Text 002 (after the DSB's tandem page).
    pub fn dsb() -> Self {
        Self {
            name: "dsb".into(),
            time_control: TimeControl {
                base_secs: 180,
                increment_secs: 2,
                black_starts_clocks: false,
            },
            drop_mate: DropMate::TakenBack,
            promotion: Promotion::PawnCaptured,
            stalemate: StalemateRule::Wait,
            draws: DrawRules {
                simultaneous_claims: false,
                simultaneous_mates: true,
                both_flags: true,
                perpetual_check: true,
                agreement: true,
            },
            touch_move: true,
            // Back-rank pawn drops, the mate rule and illegal moves as in 001.
            ..Self::turnier()
        }
    }

    /// Text 004 (a club's Regelkunde).
    pub fn verein() -> Self {
        Self {
            name: "verein".into(),
            time_control: TimeControl {
                base_secs: 300,
                increment_secs: 0,
                black_starts_clocks: true,
            },
            drop_mate: DropMate::Allowed,
            promotion: Promotion::Steal,
            dropped_rook_castles: true,
            stalemate: StalemateRule::Wait,
            draws: DrawRules {
                simultaneous_claims: false,
                simultaneous_mates: true,
                both_flags: true,
                perpetual_check: false,
                agreement: true,
            },
            hidden_pocket: HiddenPocketPolicy::Warning,
            // Back-rank pawn drops, the mate rule and illegal moves as in 001.
            ..Self::turnier()
        }
    }

    /// Online play as on FICS: illegal moves are refused, a check a drop could block is not mate.
    pub fn fics() -> Self {
        Self {
            name: "fics".into(),
            time_control: TimeControl {
                base_secs: 0,
                increment_secs: 0,
                black_starts_clocks: false,
            },
            back_rank_pawn_drop: BackRankPawnDrop::Illegal,
            drop_mate: DropMate::Allowed,
            drop_mate_rule: MateRule::DropInterposable,
            mate: MateRule::DropInterposable,
            illegal_move: IllegalMovePolicy {
                first: Consequence::Rejected,
                repeated: Consequence::Rejected,
                needs_claim: false,
                claim_window: ClaimWindow::UntilOpponentCompletesMove,
            },
            stalemate: StalemateRule::Wait,
            draws: DrawRules {
                simultaneous_claims: false,
                simultaneous_mates: false,
                both_flags: false,
                perpetual_check: false,
                agreement: true,
            },
            ..Self::tandem_2024()
        }
    }

    /// A preset by name (`tandem-2024`, `turnier`, `dsb`, `verein`, `fics`).
    pub fn preset(name: &str) -> Result<Self, RuleSetError> {
        match name {
            "tandem-2024" => Ok(Self::tandem_2024()),
            "turnier" => Ok(Self::turnier()),
            "dsb" => Ok(Self::dsb()),
            "verein" => Ok(Self::verein()),
            "fics" => Ok(Self::fics()),
            other => Err(RuleSetError::UnknownPreset(other.to_string())),
        }
    }

    /// Reads a rule set from TOML: `preset = "<name>"` (default `tandem-2024`) and any options that
    /// override the preset's, e.g. `[illegal_move] first = "warning"`.
    pub fn from_toml(text: &str) -> Result<Self, RuleSetError> {
        let doc: toml::Table = toml::from_str(text)?;
        let base = match doc.get("preset") {
            None => Self::tandem_2024(),
            Some(toml::Value::String(name)) => Self::preset(name)?,
            Some(other) => {
                return Err(RuleSetError::Invalid {
                    name: "?".into(),
                    problem: format!("`preset` must be a string, not {}", other.type_str()),
                });
            }
        };
        let mut merged = toml::Table::try_from(&base).map_err(|e| RuleSetError::Invalid {
            name: base.name.clone(),
            problem: e.to_string(),
        })?;
        for (key, value) in doc {
            if key == "preset" {
                continue;
            }
            match (merged.get_mut(&key), value) {
                (Some(toml::Value::Table(into)), toml::Value::Table(from)) => into.extend(from),
                (_, value) => {
                    merged.insert(key, value);
                }
            }
        }
        let rules: Self = merged.try_into()?;
        rules.validate()?;
        Ok(rules)
    }

    /// A preset name, or a path to a TOML file, as accepted by `--rules`.
    pub fn load(name_or_path: &str) -> Result<Self, RuleSetError> {
        if PRESETS.contains(&name_or_path) {
            return Self::preset(name_or_path);
        }
        let path = std::path::Path::new(name_or_path);
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(path).map_err(|e| RuleSetError::Invalid {
                name: name_or_path.to_string(),
                problem: format!("cannot read the file: {e}"),
            })?;
            return Self::from_toml(&text);
        }
        Err(RuleSetError::UnknownPreset(name_or_path.to_string()))
    }

    /// Rejects combinations that cannot be played.
    pub fn validate(&self) -> Result<(), RuleSetError> {
        let invalid = |problem: &str| {
            Err(RuleSetError::Invalid {
                name: self.name.clone(),
                problem: problem.to_string(),
            })
        };
        let (lo, hi) = self.pawn_drop_ranks;
        if !(1..=8).contains(&lo) || !(1..=8).contains(&hi) || lo > hi {
            return invalid("pawn_drop_ranks must be two ranks 1..=8, low first");
        }
        if lo == 1 || hi == 8 {
            return invalid(
                "pawn_drop_ranks may not include a back rank (a pawn there could not move)",
            );
        }
        if self.illegal_move.first == Consequence::Rejected
            && self.illegal_move.repeated != Consequence::Rejected
        {
            return invalid("illegal_move: when first illegal moves are rejected, all must be");
        }
        Ok(())
    }

    /// The engine's view of these rules: what is legal on a board.
    pub fn variant(&self) -> engine::Variant {
        engine::Variant {
            drop_mate: match self.drop_mate {
                DropMate::Allowed => engine::DropMate::Allowed,
                DropMate::RemovedAsCaptured | DropMate::TakenBack => engine::DropMate::Forbidden,
            },
            drop_mate_rule: self.drop_mate_rule,
            mate: self.mate,
            promotion: self.promotion,
            promoted_reverts: self.promoted_reverts,
            dropped_rook_castles: self.dropped_rook_castles,
            dropped_pawn_double_step: self.dropped_pawn_double_step,
            pawn_drop_ranks: self.pawn_drop_ranks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_loads_by_name_and_validates() {
        for name in PRESETS {
            let rules = RuleSet::load(name).unwrap();
            assert_eq!(rules.name, name);
            rules.validate().unwrap();
        }
        assert!(matches!(
            RuleSet::load("blitz"),
            Err(RuleSetError::UnknownPreset(_))
        ));
    }

    #[test]
    fn presets_round_trip_through_toml() {
        for name in PRESETS {
            let rules = RuleSet::preset(name).unwrap();
            let text = toml::to_string(&rules).unwrap();
            assert_eq!(RuleSet::from_toml(&text).unwrap(), rules, "{name}");
        }
    }

    #[test]
    fn toml_overrides_a_preset_field_by_field() {
        let rules = RuleSet::from_toml(
            "preset = \"dsb\"\nname = \"club\"\n[illegal_move]\nfirst = \"warning\"\n",
        )
        .unwrap();
        assert_eq!(rules.name, "club");
        assert_eq!(rules.illegal_move.first, Consequence::Warning);
        // Untouched fields keep the preset's value, inside the overridden table too.
        assert_eq!(rules.illegal_move.repeated, Consequence::Loss);
        assert_eq!(rules.promotion, Promotion::PawnCaptured);
    }

    #[test]
    fn bad_toml_is_a_clear_error() {
        let unknown = RuleSet::from_toml("promotion = \"teleport\"").unwrap_err();
        assert!(unknown.to_string().contains("teleport"), "{unknown}");
        let field = RuleSet::from_toml("colour_of_sky = 1").unwrap_err();
        assert!(field.to_string().contains("colour_of_sky"), "{field}");
        let ranks = RuleSet::from_toml("pawn_drop_ranks = [1, 7]").unwrap_err();
        assert!(ranks.to_string().contains("back rank"), "{ranks}");
    }

    #[test]
    fn presets_differ_where_the_texts_differ() {
        // The table of GUIDE §3, one row at a time.
        let [t, u, d, v, f] = PRESETS.map(|n| RuleSet::preset(n).unwrap());
        assert_eq!(t.drop_mate, DropMate::RemovedAsCaptured);
        assert_eq!(u.drop_mate, DropMate::RemovedAsCaptured);
        assert_eq!(d.drop_mate, DropMate::TakenBack);
        assert_eq!(v.drop_mate, DropMate::Allowed);
        assert_eq!(f.drop_mate, DropMate::Allowed);
        assert_eq!(d.promotion, Promotion::PawnCaptured);
        assert_eq!(v.promotion, Promotion::Steal);
        assert!(v.dropped_rook_castles && !t.dropped_rook_castles && !f.dropped_rook_castles);
        assert_eq!(t.illegal_move.first, Consequence::TakeBack);
        assert_eq!(u.illegal_move.first, Consequence::Loss);
        assert_eq!(f.illegal_move.first, Consequence::Rejected);
        assert_eq!(t.stalemate, StalemateRule::DrawIfBothBoards);
        assert_eq!(d.stalemate, StalemateRule::Wait);
        assert!(d.draws.perpetual_check && !v.draws.perpetual_check);
        assert!(d.touch_move && !t.touch_move && !v.touch_move);
        assert_eq!(
            (d.time_control.base_secs, d.time_control.increment_secs),
            (180, 2)
        );
        assert!(v.time_control.black_starts_clocks);
        assert_eq!(f.mate, MateRule::DropInterposable);
        assert_eq!(t.drop_mate_rule, MateRule::DropInterposable);
    }
}
