-- The lexicon (words as written, with a trigram index) fed spelling suggestions and typo
-- tolerance; both read the lexical index's term dictionary now, the same on both backends.
-- Nothing reads it, and keeping it cost every write a statement under row locks.
-- Its indexes go with it. pg_trgm stays required: migration 0001 still builds the index.
DROP TABLE lexicon;
