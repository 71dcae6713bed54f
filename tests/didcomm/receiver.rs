//! A small DIDComm receiver for the 202 + outbound delivery path: accepts
//! POSTs on a loopback port and keeps (content type, body) of each.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

#[derive(Clone, Default)]
pub struct Received(Arc<Mutex<Vec<(String, String)>>>);

impl Received {
    pub fn all(&self) -> Vec<(String, String)> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

/// Starts the receiver; `fail_first` requests are answered 503 first, to
/// exercise the retries.
pub async fn start(fail_first: usize) -> (SocketAddr, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let received = Received::default();
    let store = received.clone();
    tokio::spawn(async move {
        let mut seen = 0usize;
        while let Ok((stream, _)) = listener.accept().await {
            seen += 1;
            let fail = seen <= fail_first;
            let store = store.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut reader = BufReader::new(read);
                let mut length = 0usize;
                let mut content_type = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':') {
                        match name.to_ascii_lowercase().as_str() {
                            "content-length" => length = value.trim().parse().unwrap_or(0),
                            "content-type" => content_type = value.trim().to_owned(),
                            _ => {}
                        }
                    }
                }
                let mut body = vec![0u8; length];
                if reader.read_exact(&mut body).await.is_err() {
                    return;
                }
                let status = if fail {
                    "503 Service Unavailable"
                } else {
                    "202 Accepted"
                };
                if !fail && let Ok(mut v) = store.0.lock() {
                    v.push((content_type, String::from_utf8_lossy(&body).into_owned()));
                }
                let _ = write
                    .write_all(
                        format!(
                            "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        )
                        .as_bytes(),
                    )
                    .await;
            });
        }
    });
    (addr, received)
}
