//! A TCP proxy that can cut qrtag off from CouchDB while CouchDB itself stays
//! up, so a test can edit documents while the follower cannot see them.

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct CutProxy {
    port: u16,
    cut: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl CutProxy {
    /// Forwards a free loopback port to `upstream` (`host:port`).
    pub async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        let (cut, watching) = watch::channel(false);
        let task = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let mut cut_rx = watching.clone();
                if *cut_rx.borrow() {
                    // Cut off: hang up at once.
                    drop(client);
                    continue;
                }
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = cut_rx.wait_for(|cut| *cut) => {}
                    }
                });
            }
        });
        Self { port, cut, task }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Drops every connection and refuses new ones until [`restore`](Self::restore).
    pub fn cut(&self) {
        self.cut.send_replace(true);
    }

    pub fn restore(&self) {
        self.cut.send_replace(false);
    }
}

impl Drop for CutProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A TCP proxy that keeps every byte clients send, so a test can tell which
/// requests a server made (`GET /links/_all_docs…`) without a mock CouchDB.
pub struct RecordingProxy {
    port: u16,
    sent: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    task: tokio::task::JoinHandle<()>,
}

impl RecordingProxy {
    /// Forwards a free loopback port to `upstream` (`host:port`).
    pub async fn start(upstream: String) -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = std::sync::Arc::clone(&sent);
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let log = std::sync::Arc::clone(&log);
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    let (mut client_rx, mut client_tx) = client.into_split();
                    let (mut server_rx, mut server_tx) = server.into_split();
                    let up = async move {
                        let mut buf = vec![0u8; 16 << 10];
                        while let Ok(n) = client_rx.read(&mut buf).await {
                            if n == 0 {
                                break;
                            }
                            if let Ok(mut log) = log.lock() {
                                log.extend_from_slice(&buf[..n]);
                            }
                            if server_tx.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                        let _ = server_tx.shutdown().await;
                    };
                    let down = async move {
                        let _ = tokio::io::copy(&mut server_rx, &mut client_tx).await;
                        let _ = client_tx.shutdown().await;
                    };
                    tokio::join!(up, down);
                });
            }
        });
        Self { port, sent, task }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Everything clients have sent so far, as text.
    pub fn sent(&self) -> String {
        let sent = self.sent.lock().map(|s| s.clone()).unwrap_or_default();
        String::from_utf8_lossy(&sent).into_owned()
    }
}

impl Drop for RecordingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A TCP proxy that answers one kind of request itself with a 500 (a
/// request whose first bytes are `refused`, such as `PUT /links-keys/`) and
/// forwards everything else: a server failing at one step, for the tests
/// of what a command leaves behind.
pub struct RefusingProxy {
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl RefusingProxy {
    pub async fn start(upstream: String, refused: &'static str) -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    let (mut client_rx, client_tx) = client.into_split();
                    let client_tx = std::sync::Arc::new(tokio::sync::Mutex::new(client_tx));
                    let (mut server_rx, mut server_tx) = server.into_split();
                    let answer = std::sync::Arc::clone(&client_tx);
                    let up = async move {
                        let mut buf = vec![0u8; 16 << 10];
                        while let Ok(n) = client_rx.read(&mut buf).await {
                            if n == 0 {
                                break;
                            }
                            if buf[..n].starts_with(refused.as_bytes()) {
                                let body =
                                    r#"{"error":"unknown_error","reason":"refused by the test"}"#;
                                let resp = format!(
                                    "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\n\
                                     content-length: {}\r\nconnection: close\r\n\r\n{body}",
                                    body.len()
                                );
                                let mut tx = answer.lock().await;
                                let _ = tx.write_all(resp.as_bytes()).await;
                                let _ = tx.shutdown().await;
                                break;
                            }
                            if server_tx.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                        let _ = server_tx.shutdown().await;
                    };
                    let down = async move {
                        let mut buf = vec![0u8; 16 << 10];
                        while let Ok(n) = server_rx.read(&mut buf).await {
                            if n == 0 {
                                break;
                            }
                            if client_tx.lock().await.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                    };
                    tokio::select! {
                        _ = up => {}
                        _ = down => {}
                    }
                });
            }
        });
        Self { port, task }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for RefusingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
