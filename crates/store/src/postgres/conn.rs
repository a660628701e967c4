//! A pooled connection, and the statements run on it.
//!
//! Every statement is sent unnamed with its parameters' types (the driver's `query_typed`):
//! parse, bind, describe and execute go to the server in one message, answered in one round
//! trip, and nothing outlives the statement on the server connection. That is what a pooler in
//! transaction mode needs — PgBouncer before 1.21 hands each transaction (each statement outside
//! one) to whichever server connection is free, so a statement named on one connection and run
//! on another fails ("prepared statement does not exist", or "already exists" when another
//! client used the same name there). The server parses and plans each statement again; its
//! cost against statements kept per connection is in BENCHMARKS.md.
//!
//! Result columns must be of built-in types: the driver resolves any other type (such as
//! pgvector's `vector`) with a named statement of its own, so vectors are read as `real[]`.

use super::params::{Param, typed};
use postgres::error::Severity;
use postgres::types::{ToSql, Type};
use postgres::{Client, GenericClient, Row, Transaction};
use std::time::{Duration, Instant};

/// A connection used this recently is not asked whether it is alive before its next use:
/// under load that check was one more round trip per store call, and a connection that died
/// in between fails its next statement, which the read path retries on another connection.
pub(super) const TRUSTED_FOR: Duration = Duration::from_secs(1);

type Params<'a> = &'a [&'a dyn Param];
type TypedParams<'a> = [(&'a (dyn ToSql + Sync), Type)];

/// What a connection keeps beside the driver's client: when it last answered, and whether it
/// was lost.
pub struct State {
    answered: Instant,
    lost: bool,
}

impl State {
    /// Notes what an answer says of the connection: alive now, or lost.
    fn noted<T>(&mut self, answer: Result<T, postgres::Error>) -> Result<T, postgres::Error> {
        match &answer {
            Ok(_) => self.answered = Instant::now(),
            Err(e) if lost(e) => self.lost = true,
            Err(_) => {}
        }
        answer
    }
}

/// Whether an error means the connection is gone: closed, or ended by the server (a FATAL
/// error such as "terminating connection due to administrator command").
pub fn lost(e: &postgres::Error) -> bool {
    e.is_closed()
        || e.as_db_error()
            .is_some_and(|db| matches!(db.parsed_severity(), Some(Severity::Fatal | Severity::Panic)))
}

/// One pooled connection: the driver's client, and when it last answered.
pub struct Conn {
    client: Client,
    state: State,
}

impl Conn {
    pub(super) fn new(client: Client) -> Conn {
        Conn { client, state: State { answered: Instant::now(), lost: false } }
    }

    /// Whether the connection answered within [`TRUSTED_FOR`].
    pub(super) fn answered_lately(&self) -> bool {
        self.state.answered.elapsed() < TRUSTED_FOR
    }

    /// Whether the connection is gone (closed, or a statement was refused as on a lost one).
    pub fn is_lost(&self) -> bool {
        self.state.lost || self.client.is_closed()
    }

    /// Asks the server for nothing: whether the connection is alive.
    pub(super) fn ping(&mut self) -> Result<(), postgres::Error> {
        let answer = self.client.simple_query("").map(drop);
        self.state.noted(answer)
    }

    /// Statements as one text, in the simple protocol.
    pub fn batch_execute(&mut self, sql: &str) -> Result<(), postgres::Error> {
        let answer = self.client.batch_execute(sql);
        self.state.noted(answer)
    }

    /// A transaction on this connection.
    pub fn transaction(&mut self) -> Result<Tx<'_>, postgres::Error> {
        let tx = self.state.noted(self.client.transaction())?;
        Ok(Tx { tx, state: &mut self.state })
    }

    /// A transaction started by `build` (isolation level, read only).
    pub fn build_transaction(
        &mut self,
        build: impl FnOnce(postgres::TransactionBuilder<'_>) -> Result<Transaction<'_>, postgres::Error>,
    ) -> Result<Tx<'_>, postgres::Error> {
        let tx = self.state.noted(build(self.client.build_transaction()))?;
        Ok(Tx { tx, state: &mut self.state })
    }
}

/// A transaction on a [`Conn`].
pub struct Tx<'a> {
    tx: Transaction<'a>,
    state: &'a mut State,
}

impl Tx<'_> {
    pub fn batch_execute(&mut self, sql: &str) -> Result<(), postgres::Error> {
        let answer = self.tx.batch_execute(sql);
        self.state.noted(answer)
    }

    pub fn commit(self) -> Result<(), postgres::Error> {
        let answer = self.tx.commit();
        self.state.noted(answer)
    }

    pub fn rollback(self) -> Result<(), postgres::Error> {
        let answer = self.tx.rollback();
        self.state.noted(answer)
    }
}

/// What the module's functions run statements on, a connection or a transaction.
pub trait Sql {
    /// Runs `call` on the connection or transaction, noting what its answer says of the
    /// connection.
    fn run<T>(
        &mut self,
        call: impl FnOnce(&mut dyn Run) -> Result<T, postgres::Error>,
    ) -> Result<T, postgres::Error>;

    fn query(&mut self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, postgres::Error> {
        self.run(|c| c.query(sql, &typed(params)))
    }

    fn query_one(&mut self, sql: &str, params: Params<'_>) -> Result<Row, postgres::Error> {
        self.run(|c| c.query_one(sql, &typed(params)))
    }

    fn query_opt(&mut self, sql: &str, params: Params<'_>) -> Result<Option<Row>, postgres::Error> {
        self.run(|c| c.query_opt(sql, &typed(params)))
    }

    fn execute(&mut self, sql: &str, params: Params<'_>) -> Result<u64, postgres::Error> {
        self.run(|c| c.execute(sql, &typed(params)))
    }
}

/// An unnamed statement run on a client or a transaction (the driver's `GenericClient` has
/// generic methods, so it cannot be a `dyn` one).
pub trait Run {
    fn query(&mut self, sql: &str, params: &TypedParams<'_>) -> Result<Vec<Row>, postgres::Error>;
    fn query_one(&mut self, sql: &str, params: &TypedParams<'_>) -> Result<Row, postgres::Error>;
    fn query_opt(&mut self, sql: &str, params: &TypedParams<'_>) -> Result<Option<Row>, postgres::Error>;
    fn execute(&mut self, sql: &str, params: &TypedParams<'_>) -> Result<u64, postgres::Error>;
}

impl<C: GenericClient> Run for C {
    fn query(&mut self, sql: &str, params: &TypedParams<'_>) -> Result<Vec<Row>, postgres::Error> {
        self.query_typed(sql, params)
    }
    fn query_one(&mut self, sql: &str, params: &TypedParams<'_>) -> Result<Row, postgres::Error> {
        self.query_typed_one(sql, params)
    }
    fn query_opt(&mut self, sql: &str, params: &TypedParams<'_>) -> Result<Option<Row>, postgres::Error> {
        self.query_typed_opt(sql, params)
    }
    fn execute(&mut self, sql: &str, params: &TypedParams<'_>) -> Result<u64, postgres::Error> {
        self.execute_typed(sql, params)
    }
}

impl Sql for Conn {
    fn run<T>(
        &mut self,
        call: impl FnOnce(&mut dyn Run) -> Result<T, postgres::Error>,
    ) -> Result<T, postgres::Error> {
        let answer = call(&mut self.client);
        self.state.noted(answer)
    }
}

impl Sql for Tx<'_> {
    fn run<T>(
        &mut self,
        call: impl FnOnce(&mut dyn Run) -> Result<T, postgres::Error>,
    ) -> Result<T, postgres::Error> {
        let answer = call(&mut self.tx);
        self.state.noted(answer)
    }
}
