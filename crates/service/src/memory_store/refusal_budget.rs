//! How many refused stores of one actor become audit records: at most
//! [`RECORDS_PER_MINUTE`] a minute each. The calls past that are counted, and the next record
//! the actor gets says how many calls and items went unrecorded one by one since: the trail
//! still accounts for every refused call, but a read key sending refused stores in a loop
//! cannot grow the append-only table without bound. Pure: the caller gives the time.

use std::collections::HashMap;

/// Records of refused stores per actor and minute.
pub const RECORDS_PER_MINUTE: u32 = 10;
const MINUTE_MS: i64 = 60_000;

/// The refused calls of an actor that were counted but not recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unrecorded {
    pub calls: u64,
    pub items: u64,
    /// When the first of them was refused (epoch ms).
    pub since: i64,
}

#[derive(Debug, Default)]
struct ActorWindow {
    started: i64,
    recorded: u32,
    unrecorded: Unrecorded,
}

/// Per actor: its current minute and what was left out.
#[derive(Debug, Default)]
pub struct RefusalBudget {
    actors: HashMap<String, ActorWindow>,
}

impl RefusalBudget {
    /// A refused call of `actor` naming `items` items at `now`: `Some` (with what went
    /// unrecorded before it, to say in its record) when it is to be recorded, `None` when it
    /// was only counted.
    pub fn admit(&mut self, actor: &str, items: u64, now: i64) -> Option<Unrecorded> {
        // Actors quiet for a minute are forgotten: the map holds only the ones refused lately.
        if self.actors.len() > 1_000 {
            self.actors.retain(|_, w| now - w.started < MINUTE_MS || w.unrecorded.calls > 0);
        }
        let window = self
            .actors
            .entry(actor.to_string())
            .or_insert(ActorWindow { started: now, ..Default::default() });
        if now - window.started >= MINUTE_MS {
            window.started = now;
            window.recorded = 0;
        }
        if window.recorded < RECORDS_PER_MINUTE {
            window.recorded += 1;
            return Some(std::mem::take(&mut window.unrecorded));
        }
        let left_out = &mut window.unrecorded;
        if left_out.calls == 0 {
            left_out.since = now;
        }
        left_out.calls += 1;
        left_out.items += items;
        None
    }

    /// Gives back the place `admit` granted, when its record could not be written: what it
    /// carried is counted again, so nothing refused goes unaccounted.
    pub fn give_back(&mut self, actor: &str, carried: Unrecorded, items: u64, now: i64) {
        let Some(window) = self.actors.get_mut(actor) else { return };
        window.recorded = window.recorded.saturating_sub(1);
        let left_out = &mut window.unrecorded;
        let earlier = [*left_out, carried].into_iter().filter(|u| u.calls > 0).map(|u| u.since).min();
        left_out.since = earlier.map_or(now, |t| t.min(now));
        left_out.calls += carried.calls + 1;
        left_out.items += carried.items + items;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_actor_gets_its_records_a_minute_and_the_rest_is_counted_into_the_next() {
        let mut budget = RefusalBudget::default();
        for _ in 0..RECORDS_PER_MINUTE {
            assert_eq!(budget.admit("key:reader", 100, 1_000), Some(Unrecorded::default()));
        }
        assert_eq!(budget.admit("key:reader", 100, 2_000), None);
        assert_eq!(budget.admit("key:reader", 5, 3_000), None);
        // Another actor has its own minute.
        assert_eq!(budget.admit("key:other", 1, 3_000), Some(Unrecorded::default()));
        // A minute after the window opened: recorded again, with what was left out.
        assert_eq!(
            budget.admit("key:reader", 100, 61_000),
            Some(Unrecorded { calls: 2, items: 105, since: 2_000 })
        );
        assert_eq!(budget.admit("key:reader", 100, 61_001), Some(Unrecorded::default()));
    }

    #[test]
    fn a_record_not_written_is_counted_again() {
        let mut budget = RefusalBudget::default();
        let carried = budget.admit("a", 3, 10).unwrap();
        budget.give_back("a", carried, 3, 10);
        assert_eq!(budget.admit("a", 1, 20), Some(Unrecorded { calls: 1, items: 3, since: 10 }));
    }
}
