//! A long document's chunks as the store keeps them (the byte ranges of its text embedded one
//! by one, which a find by meaning matches), for a person to see how it is cut: the web UI's
//! item page. An item not embedded yet (no model, or waiting for the backfill) shows the cut
//! the domain's chunker makes, which is what the store will keep.

use super::MemoryFind;
use cortex_domain::chunking;
use uuid::Uuid;

/// Characters of each chunk's text shown.
pub const SHOWN_CHARS: usize = 400;

pub struct ChunkView {
    /// Byte range in the item's text.
    pub start: usize,
    pub end: usize,
    /// Headings above the chunk, outermost first.
    pub heading_path: Vec<String>,
    /// The chunk's text, cut at [`SHOWN_CHARS`].
    pub text: String,
    pub cut: bool,
}

pub struct ItemChunks {
    pub chunks: Vec<ChunkView>,
    /// The ranges are the store's (embedded); otherwise the chunker's, not embedded yet.
    pub stored: bool,
}

impl MemoryFind<'_> {
    /// The chunks of the live item `id` within the caller's reach; `None` when it has none
    /// (a short text, a kind that is not chunked) or is out of reach.
    pub fn item_chunks(&self, id: Uuid) -> crate::Result<Option<ItemChunks>> {
        let Some(item) = self.service.view.get(&[id])?.into_iter().find(|i| i.deleted_at.is_none()) else {
            return Ok(None);
        };
        let record = &item.record;
        if !chunking::applies_to(record.kind) {
            return Ok(None);
        }
        let text = record.text();
        let cut = chunking::chunk(text);
        let stored: Vec<(usize, usize)> = self
            .service
            .view
            .vectors_of(&[id])?
            .into_iter()
            .flat_map(|v| v.chunks)
            .map(|c| (c.start as usize, c.end as usize))
            .filter(|(s, e)| {
                s < e && *e <= text.len() && text.is_char_boundary(*s) && text.is_char_boundary(*e)
            })
            .collect();
        let from_store = !stored.is_empty();
        let ranges: Vec<(usize, usize)> =
            if from_store { stored } else { cut.iter().map(|c| (c.start, c.end)).collect() };
        if ranges.is_empty() {
            return Ok(None);
        }
        let chunks = ranges
            .into_iter()
            .map(|(start, end)| {
                let whole = &text[start..end];
                let shown: String = whole.chars().take(SHOWN_CHARS).collect();
                ChunkView {
                    start,
                    end,
                    heading_path: cut
                        .iter()
                        .find(|c| c.start == start)
                        .map(|c| c.heading_path.clone())
                        .unwrap_or_default(),
                    cut: shown.len() < whole.len(),
                    text: shown,
                }
            })
            .collect();
        Ok(Some(ItemChunks { chunks, stored: from_store }))
    }
}
