//! English stemming with a memory: the same few thousand words make most of any text, and
//! stemming each occurrence again was a quarter of building the index (Snowball's suffix
//! tables, `perf` on 100k items of prose). Each tokenizer keeps its own table of the stems it
//! has computed (a tokenizer is used by one thread at a time), emptied when it grows large.
//! The stems are Snowball English's (rust-stemmers), for index and query alike.

use rust_stemmers::{Algorithm, Stemmer};
use std::collections::HashMap;
use std::sync::Arc;
use tantivy::tokenizer::{Token, TokenFilter, TokenStream, Tokenizer};

/// Distinct words remembered per tokenizer before the table is emptied.
const REMEMBERED: usize = 200_000;

/// The filter: stems each token, remembering stems already computed.
#[derive(Clone)]
pub(crate) struct CachedStemmer {
    stemmer: Arc<Stemmer>,
}

impl CachedStemmer {
    pub(crate) fn english() -> CachedStemmer {
        CachedStemmer { stemmer: Arc::new(Stemmer::create(Algorithm::English)) }
    }
}

impl TokenFilter for CachedStemmer {
    type Tokenizer<T: Tokenizer> = CachedStemmerFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> CachedStemmerFilter<T> {
        CachedStemmerFilter { tokenizer, stemmer: self.stemmer, stems: HashMap::new() }
    }
}

#[derive(Clone)]
pub(crate) struct CachedStemmerFilter<T> {
    tokenizer: T,
    stemmer: Arc<Stemmer>,
    stems: HashMap<String, String>,
}

impl<T: Tokenizer> Tokenizer for CachedStemmerFilter<T> {
    type TokenStream<'a> = CachedStemmerStream<'a, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        if self.stems.len() > REMEMBERED {
            self.stems.clear();
        }
        CachedStemmerStream {
            tail: self.tokenizer.token_stream(text),
            stemmer: &self.stemmer,
            stems: &mut self.stems,
        }
    }
}

pub(crate) struct CachedStemmerStream<'a, T> {
    tail: T,
    stemmer: &'a Stemmer,
    stems: &'a mut HashMap<String, String>,
}

impl<T: TokenStream> TokenStream for CachedStemmerStream<'_, T> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        let token = self.tail.token_mut();
        match self.stems.get(&token.text) {
            Some(stem) => {
                token.text.clear();
                token.text.push_str(stem);
            }
            None => {
                let stem = self.stemmer.stem(&token.text).into_owned();
                self.stems.insert(std::mem::replace(&mut token.text, stem.clone()), stem);
            }
        }
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}
