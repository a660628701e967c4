//! A pooled connection that keeps its prepared statements.
//!
//! The driver's `query(&str)` prepares the text as a new statement, waits for the server's
//! description of it, executes it and closes it: two round trips and a parse and plan on the
//! server for every statement. Here each connection prepares a text once and keeps the
//! statement, so the same text runs in one round trip with the server's parse done once.
//! A connection keeps at most [`MAX_STATEMENTS`] of them (the texts a store sends are a few
//! dozen; filters make a few hundred variants at most), and forgets them all past that.
//!
//! A statement the server no longer accepts as prepared — its table changed under it so that
//! its rows would change type ("cached plan must not change result type"), or it was
//! deallocated — is prepared again and run once more, when no transaction is open (one that
//! is open has failed with it, so the error goes to the caller, and the next try prepares anew).

use postgres::error::{Severity, SqlState};
use postgres::types::ToSql;
use postgres::{Client, GenericClient, Row, Statement, Transaction};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Past this many statements a connection forgets them all and starts again.
const MAX_STATEMENTS: usize = 512;

/// A connection used this recently is not asked whether it is alive before its next use:
/// under load that check was one more round trip per store call, and a connection that died
/// in between fails its next statement, which the read path retries on another connection.
pub(super) const TRUSTED_FOR: Duration = Duration::from_secs(1);

type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// What a connection keeps beside the driver's client: its prepared statements by their
/// text, when it last answered, and whether it was lost.
pub struct State {
    statements: HashMap<String, Statement>,
    answered: Instant,
    lost: bool,
}

impl State {
    fn statement(&mut self, client: &mut impl Prepare, sql: &str) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.noted(client.prepare_text(sql))?;
        if self.statements.len() >= MAX_STATEMENTS {
            self.statements.clear();
        }
        self.statements.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

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

/// Whether the server refused a prepared statement as such (not its parameters or data):
/// preparing the text again makes it run.
fn stale(e: &postgres::Error) -> bool {
    match e.code() {
        Some(code) if *code == SqlState::INVALID_SQL_STATEMENT_NAME => true,
        Some(code) if *code == SqlState::FEATURE_NOT_SUPPORTED => {
            e.as_db_error().is_some_and(|db| db.message().contains("cached plan must not change result type"))
        }
        _ => false,
    }
}

trait Prepare {
    fn prepare_text(&mut self, sql: &str) -> Result<Statement, postgres::Error>;
}

impl Prepare for Client {
    fn prepare_text(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        self.prepare(sql)
    }
}

impl Prepare for Transaction<'_> {
    fn prepare_text(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        self.prepare(sql)
    }
}

/// One pooled connection: the driver's client, its statements, and when it last answered.
pub struct Conn {
    client: Client,
    state: State,
}

impl Conn {
    pub(super) fn new(client: Client) -> Conn {
        let state = State { statements: HashMap::new(), answered: Instant::now(), lost: false };
        Conn { client, state }
    }

    /// Whether the connection answered within [`TRUSTED_FOR`].
    pub(super) fn answered_lately(&self) -> bool {
        self.state.answered.elapsed() < TRUSTED_FOR
    }

    /// The driver's client, for what is not a cached statement (migrations, a `COPY`, one-off
    /// administration).
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
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

    /// Statements as one text, in the simple protocol (nothing cached).
    pub fn batch_execute(&mut self, sql: &str) -> Result<(), postgres::Error> {
        let answer = self.client.batch_execute(sql);
        self.state.noted(answer)
    }

    /// A transaction whose statements are cached as the connection's are.
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

/// A transaction on a [`Conn`], with its statements.
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
}

/// What the module's functions run statements on, a connection or a transaction: each
/// statement text prepared once per connection (see the module's doc).
pub trait Sql {
    /// Runs `call` with the prepared statement of `sql`.
    fn run<T>(
        &mut self,
        sql: &str,
        call: impl FnMut(&mut dyn Run, &Statement) -> Result<T, postgres::Error>,
    ) -> Result<T, postgres::Error>;

    fn query(&mut self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, postgres::Error> {
        self.run(sql, |c, s| c.query(s, params))
    }

    fn query_one(&mut self, sql: &str, params: Params<'_>) -> Result<Row, postgres::Error> {
        self.run(sql, |c, s| c.query_one(s, params))
    }

    fn query_opt(&mut self, sql: &str, params: Params<'_>) -> Result<Option<Row>, postgres::Error> {
        self.run(sql, |c, s| c.query_opt(s, params))
    }

    fn execute(&mut self, sql: &str, params: Params<'_>) -> Result<u64, postgres::Error> {
        self.run(sql, |c, s| c.execute(s, params))
    }
}

/// A prepared statement run on a client or a transaction (the driver's `GenericClient` is
/// generic in its statement type, so it cannot be a `dyn` one).
pub trait Run {
    fn query(&mut self, statement: &Statement, params: Params<'_>) -> Result<Vec<Row>, postgres::Error>;
    fn query_one(&mut self, statement: &Statement, params: Params<'_>) -> Result<Row, postgres::Error>;
    fn query_opt(
        &mut self,
        statement: &Statement,
        params: Params<'_>,
    ) -> Result<Option<Row>, postgres::Error>;
    fn execute(&mut self, statement: &Statement, params: Params<'_>) -> Result<u64, postgres::Error>;
}

impl<C: GenericClient> Run for C {
    fn query(&mut self, statement: &Statement, params: Params<'_>) -> Result<Vec<Row>, postgres::Error> {
        GenericClient::query(self, statement, params)
    }
    fn query_one(&mut self, statement: &Statement, params: Params<'_>) -> Result<Row, postgres::Error> {
        GenericClient::query_one(self, statement, params)
    }
    fn query_opt(
        &mut self,
        statement: &Statement,
        params: Params<'_>,
    ) -> Result<Option<Row>, postgres::Error> {
        GenericClient::query_opt(self, statement, params)
    }
    fn execute(&mut self, statement: &Statement, params: Params<'_>) -> Result<u64, postgres::Error> {
        GenericClient::execute(self, statement, params)
    }
}

impl Sql for Conn {
    fn run<T>(
        &mut self,
        sql: &str,
        mut call: impl FnMut(&mut dyn Run, &Statement) -> Result<T, postgres::Error>,
    ) -> Result<T, postgres::Error> {
        let statement = self.state.statement(&mut self.client, sql)?;
        let answer = match call(&mut self.client, &statement) {
            Err(e) if stale(&e) => {
                self.state.statements.clear();
                let statement = self.state.statement(&mut self.client, sql)?;
                call(&mut self.client, &statement)
            }
            other => other,
        };
        self.state.noted(answer)
    }
}

impl Sql for Tx<'_> {
    fn run<T>(
        &mut self,
        sql: &str,
        mut call: impl FnMut(&mut dyn Run, &Statement) -> Result<T, postgres::Error>,
    ) -> Result<T, postgres::Error> {
        let statement = self.state.statement(&mut self.tx, sql)?;
        let answer = call(&mut self.tx, &statement);
        if answer.as_ref().is_err_and(stale) {
            // The transaction has failed; the caller's next one prepares anew.
            self.state.statements.clear();
        }
        self.state.noted(answer)
    }
}
