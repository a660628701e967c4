//! The connection pool: r2d2 over the driver, each connection a [`Conn`] keeping its prepared
//! statements. A connection is asked whether it is alive when it is taken only if it has not
//! answered within [`conn::TRUSTED_FOR`]; a connection that died meanwhile (the server
//! restarted, an operator ended its backend) fails the statement it is given, and
//! [`PostgresStore`](super::PostgresStore) takes another for work it may repeat.

use super::conn::Conn;
use super::tls::Tls;
use r2d2::ManageConnection;
use r2d2_postgres::PostgresConnectionManager;
use std::time::Duration;

pub type Pool = r2d2::Pool<Manager>;
pub type Pooled = r2d2::PooledConnection<Manager>;

/// How long a caller waits for a free pooled connection.
const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Manager(PostgresConnectionManager<Tls>);

impl ManageConnection for Manager {
    type Connection = Conn;
    type Error = postgres::Error;

    fn connect(&self) -> Result<Conn, postgres::Error> {
        Ok(Conn::new(self.0.connect()?))
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), postgres::Error> {
        if conn.answered_lately() && !conn.is_lost() {
            return Ok(());
        }
        conn.ping()
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.is_lost()
    }
}

pub fn build(config: postgres::Config, tls: Tls, size: u32) -> Result<Pool, r2d2::Error> {
    r2d2::Pool::builder()
        .max_size(size.max(1))
        .min_idle(Some(1))
        .connection_timeout(CHECKOUT_TIMEOUT)
        .build(Manager(PostgresConnectionManager::new(config, tls)))
}
