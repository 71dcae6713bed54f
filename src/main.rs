//! The `qrtag` binary: everything lives in the library's `cli` module.

fn main() -> std::process::ExitCode {
    qrtag::cli::main()
}
