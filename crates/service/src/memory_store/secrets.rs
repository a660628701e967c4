//! The first stage, before anything else reads an item: credentials in its text
//! (`cortex_domain::secrets`) handled as `CORTEX_SECRETS` says — replaced by a marker naming
//! their rule (`redact`), the item refused naming the field and the rule (`refuse`), or kept
//! (`off`). Everything after this stage (natural keys, governance, the embedder, the store,
//! the indexes, the audit trail) sees only the redacted text.

use super::MemoryStore;
use crate::response::Redacted;
use crate::settings::SecretsMode;
use cortex_domain::item::{ItemOp, Refused};
use cortex_domain::secrets::{self, ItemFinding};
use cortex_domain::{ErrorCode, ValidationError};

impl MemoryStore<'_> {
    /// `op` (the item at request position `index`) as it may be stored, and what was taken out
    /// of it; under `refuse`, the refusal of an item holding a secret.
    pub(super) fn screen(&self, index: usize, op: ItemOp) -> Result<(ItemOp, Vec<Redacted>), Refused> {
        let mode = self.service.shared.secrets;
        let ItemOp::Upsert(mut item) = op else { return Ok((op, Vec::new())) };
        if mode == SecretsMode::Off {
            return Ok((ItemOp::Upsert(item), Vec::new()));
        }
        let found = secrets::redact_item(&mut item);
        if mode == SecretsMode::Refuse {
            let secrets: Vec<&ItemFinding> = found.iter().filter(|f| f.is_secret()).collect();
            if let Some(first) = secrets.first() {
                return Err(Refused {
                    kind: Some(item.kind),
                    error: refusal(index, first, secrets.len() - 1),
                });
            }
        }
        let redacted =
            found.into_iter().map(|f| Redacted { field: f.field, rule: f.rule.to_string() }).collect();
        Ok((ItemOp::Upsert(item), redacted))
    }
}

/// The refusal of an item holding `first` and `more` other secrets.
fn refusal(index: usize, first: &ItemFinding, more: usize) -> ValidationError {
    let others = match more {
        0 => String::new(),
        n => format!(" (and {n} more secret{} elsewhere in the item)", if n == 1 { "" } else { "s" }),
    };
    ValidationError::new(
        ErrorCode::InvalidValue,
        format!("items[{index}].{}", first.field),
        format!(
            "`{}` holds a secret ({}){others}; this server refuses secrets (CORTEX_SECRETS=refuse)",
            first.field, first.rule
        ),
        "remove the secret from the text and store a reference to where it lives instead (\"the deploy key is in the vault at ops/deploy\"), then send the item again",
    )
}
