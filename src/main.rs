fn main() -> std::process::ExitCode {
    neocode::cli::main()
}
