//! Which stored item a new one turns out to be: the duplicate checks, and the order in which
//! they are tried. The first check that finds an owner wins, so the order is the rule:
//!
//! 1. the same id (imports only: an item moved before is left alone);
//! 2. the same idempotency key in the project (deleted items too: a key is never reused);
//! 3. the same natural key in the project (`natural_key`): an issue, a pull request, a change…;
//! 4. the same normalized text in the same kind and full scope (`content_hash`), unless the
//!    caller sent `dedupe: false`, or the item is a link (a relation or observation is the
//!    same link by its ends, not its text: two relations of one type between other items may
//!    read alike).
//!
//! The store runs these checks inside the write transaction (they must see every committed
//! write); the service predicts them for references to entities of the same batch. Both take
//! the order from here.

use crate::kind::Kind;
use uuid::Uuid;

/// One way a new item can be the same as a stored one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DuplicateCheck {
    /// An imported item whose id is already stored.
    SameId,
    IdempotencyKey,
    /// A live item of the project has the same natural key (`crate::natural_key`).
    NaturalKey,
    ContentHash,
}

use DuplicateCheck::*;

/// The checks of one write, in the order they are tried.
pub type DuplicateChecks = &'static [DuplicateCheck];

/// An insert: every check.
pub const INSERT: DuplicateChecks = &[IdempotencyKey, NaturalKey, ContentHash];
/// An insert stored even when its text is stored already.
pub const INSERT_ANYWAY: DuplicateChecks = &[IdempotencyKey, NaturalKey];
/// An item brought in by `cortex import`, as it was: its id, or its idempotency key, taken
/// means it is here already. Its natural key and text are not compared: it may be an old
/// version the file keeps beside the new one.
pub const IMPORT: DuplicateChecks = &[SameId, IdempotencyKey];

/// The checks an insert of `kind` goes through; `dedupe` is the caller's (`false` stores an
/// exact duplicate anyway).
pub fn insert_checks(kind: Kind, dedupe: bool) -> DuplicateChecks {
    if dedupe && !crate::graph::is_link(kind) { INSERT } else { INSERT_ANYWAY }
}

/// Whether a write with these checks compares texts at all (and so may be skipped as a
/// near-duplicate too).
pub fn compares_text(checks: DuplicateChecks) -> bool {
    checks.contains(&ContentHash)
}

/// The stored item a write turns out to duplicate: the owner found by the first of `checks`
/// that finds one (`owner` answers one check), and which check it was.
pub fn first_owner<E>(
    checks: DuplicateChecks,
    mut owner: impl FnMut(DuplicateCheck) -> Result<Option<Uuid>, E>,
) -> Result<Option<(Uuid, DuplicateCheck)>, E> {
    for &check in checks {
        if let Some(id) = owner(check)? {
            return Ok(Some((id, check)));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_check_that_finds_an_owner_wins() {
        let key_owner = Uuid::from_u128(1);
        let text_owner = Uuid::from_u128(2);
        let owner = |check| {
            Ok::<_, ()>(match check {
                IdempotencyKey => Some(key_owner),
                ContentHash => Some(text_owner),
                _ => None,
            })
        };
        assert_eq!(first_owner(INSERT, owner), Ok(Some((key_owner, IdempotencyKey))));
        assert_eq!(first_owner(&[ContentHash, IdempotencyKey], owner), Ok(Some((text_owner, ContentHash))));
        assert_eq!(first_owner(&[NaturalKey], owner), Ok(None));
    }

    #[test]
    fn links_and_dedupe_false_skip_the_text_check() {
        assert!(compares_text(insert_checks(Kind::Decision, true)));
        assert!(!compares_text(insert_checks(Kind::Decision, false)));
        assert!(!compares_text(insert_checks(Kind::Relation, true)));
        assert!(!compares_text(insert_checks(Kind::Observation, true)));
        assert!(compares_text(insert_checks(Kind::Entity, true)));
        assert!(!compares_text(IMPORT));
    }
}
