# SPDX-License-Identifier: Apache-2.0
#
# sbx R kernel: one R session per context, driven by sbx-agent with the line protocol of the
# other kernels (guest-agent/interp/README.md) over two FIFOs the agent made (base R has no
# unix sockets): $SBX_KERNEL_FIFO.in carries requests, $SBX_KERNEL_FIFO.out the answers.
#   agent -> kernel  {"code", "env"?, "genv"?}
#   kernel -> agent  Y (ready) | R<json> (forwarded verbatim) | D (done)
# Code runs in .GlobalEnv, one top-level expression at a time (as the R console and IRkernel
# do): every visible value is shown, the last expression's as the main result; data frames and
# matrices also as an HTML table; plots (a png device opened on first use) as PNG after the
# cell. User output goes straight to fd 1 / fd 2 (pipes the agent reads and timestamps), flushed
# before every R or D line. SIGINT interrupts the running expression; the session survives.
#   Rscript --no-save --no-restore kernel.R

local({
  fifo_base <- Sys.getenv("SBX_KERNEL_FIFO")
  Sys.unsetenv(c("SBX_KERNEL_FIFO", "SBX_KERNEL_PRELOAD"))
  req_con <- fifo(paste0(fifo_base, ".in"), open = "r", blocking = TRUE)
  rep_con <- fifo(paste0(fifo_base, ".out"), open = "w", blocking = TRUE)

  plot_dir <- file.path(tempdir(), "sbx-plots")
  dir.create(plot_dir, showWarnings = FALSE)
  plot_dev <- NULL
  genv <- character()
  count <- 0L
  interrupted <- FALSE

  # ---- wire ----

  # One whole line per message: an interrupt must not cut one short (or lose the D line).
  send <- function(line) {
    suspendInterrupts({
      flush(stdout())
      flush(stderr())
      writeLines(line, rep_con, useBytes = TRUE)
      flush(rep_con)
    })
  }

  b64_chars <- c(LETTERS, letters, 0:9, "+", "/")

  b64 <- function(r) {
    n <- length(r)
    if (n == 0L) return("")
    pad <- (3L - n %% 3L) %% 3L
    v <- matrix(c(as.integer(r), integer(pad)), nrow = 3L)
    w <- v[1L, ] * 65536L + v[2L, ] * 256L + v[3L, ]
    idx <- rbind(w %/% 262144L, (w %/% 4096L) %% 64L, (w %/% 64L) %% 64L, w %% 64L) + 1L
    out <- b64_chars[idx]
    if (pad > 0L) out[(length(out) - pad + 1L):length(out)] <- "="
    paste(out, collapse = "")
  }

  # A JSON string from any R string: invalid UTF-8 becomes U+FFFD, control characters escaped.
  jstr <- function(s) {
    s <- paste(s, collapse = "\n")
    s <- iconv(enc2utf8(s), "UTF-8", "UTF-8", sub = "\uFFFD")
    if (is.na(s)) s <- ""
    s <- gsub("\\", "\\\\", s, fixed = TRUE)
    s <- gsub("\"", "\\\"", s, fixed = TRUE)
    s <- gsub("\n", "\\n", s, fixed = TRUE)
    s <- gsub("\r", "\\r", s, fixed = TRUE)
    s <- gsub("\t", "\\t", s, fixed = TRUE)
    m <- gregexpr("[\001-\037\177]", s, perl = TRUE)
    if (m[[1L]][1L] != -1L) {
      regmatches(s, m) <- list(sprintf("\\u%04x", utf8ToInt(paste(regmatches(s, m)[[1L]],
                                                                  collapse = ""))))
    }
    paste0("\"", s, "\"")
  }

  escapes <- c(n = "\n", t = "\t", r = "\r", b = "\b", f = "\f", "\"" = "\"", "\\" = "\\",
               "/" = "/")

  unescape <- function(t) {
    s <- substr(t, 2L, nchar(t, type = "bytes") - 1L)
    if (grepl("\\", s, fixed = TRUE)) {
      m <- gregexpr("\\\\(u[0-9a-fA-F]{4}|.)", s, perl = TRUE, useBytes = TRUE)
      found <- regmatches(s, m)[[1L]]
      key <- substr(found, 2L, 2L)
      rep <- unname(escapes[key])
      u <- key == "u"
      if (any(u)) {
        cp <- strtoi(substr(found[u], 3L, 6L), 16L)
        cp[cp >= 0xD800 & cp <= 0xDFFF] <- 0xFFFD
        rep[u] <- vapply(cp, intToUtf8, "")
      }
      rep[is.na(rep)] <- key[is.na(rep)]
      regmatches(s, m) <- list(rep)
    }
    Encoding(s) <- "UTF-8"
    s
  }

  # The requests the agent sends: objects, strings, and the odd literal.
  json_parse <- function(line) {
    re <- "\"[^\"\\\\]*+(?:\\\\.[^\"\\\\]*+)*+\"|[{}\\[\\],:]|true|false|null|-?[0-9][0-9.eE+-]*"
    toks <- regmatches(line, gregexpr(re, line, perl = TRUE, useBytes = TRUE))[[1L]]
    pos <- 0L
    take <- function() {
      pos <<- pos + 1L
      if (pos > length(toks)) stop("truncated JSON")
      toks[[pos]]
    }
    value <- function() {
      t <- take()
      if (t == "{" || t == "[") {
        obj <- t == "{"
        out <- list()
        close <- if (obj) "}" else "]"
        if (pos < length(toks) && toks[[pos + 1L]] == close) {
          pos <<- pos + 1L
          return(out)
        }
        repeat {
          if (obj) {
            k <- unescape(take())
            if (take() != ":") stop("bad JSON")
            out[k] <- list(value())
          } else {
            out[length(out) + 1L] <- list(value())
          }
          t <- take()
          if (t == close) return(out)
          if (t != ",") stop("bad JSON")
        }
      }
      if (startsWith(t, "\"")) return(unescape(t))
      switch(t, true = TRUE, false = FALSE, null = NULL, as.numeric(t))
    }
    value()
  }

  # ---- rich values ----

  html_escape <- function(x) {
    x <- gsub("&", "&amp;", x, fixed = TRUE)
    x <- gsub("<", "&lt;", x, fixed = TRUE)
    gsub(">", "&gt;", x, fixed = TRUE)
  }

  col_type <- function(x) {
    if (is.factor(x)) return("fct")
    switch(typeof(x), double = if (inherits(x, "Date")) "date" else "dbl", integer = "int",
           character = "chr", logical = "lgl", complex = "cpl", list = "list", class(x)[1L])
  }

  max_rows <- 60L
  max_cols <- 20L

  # A data frame or matrix as an HTML table in the manner of IRkernel's repr: a caption with
  # the class and dimensions, a row of column types, first and last rows past max_rows.
  html_table <- function(v) {
    df <- as.data.frame(v, stringsAsFactors = FALSE)
    nr <- nrow(df)
    nc <- ncol(df)
    rows <- if (nr > max_rows) c(seq_len(max_rows %/% 2L), seq.int(nr - max_rows %/% 2L + 1L, nr))
            else seq_len(nr)
    cols <- if (nc > max_cols) seq_len(max_cols) else seq_len(nc)
    what <- if (is.matrix(v)) sprintf("A matrix: %d &times; %d of type %s", nr, nc,
                                      col_type(as.vector(v)))
            else sprintf("A %s: %d &times; %d", html_escape(class(v)[1L]), nr, nc)
    rn <- rownames(df)
    if (is.matrix(v) && is.null(rownames(v))) rn <- rep("", nr)
    cells <- vapply(cols, function(j) {
      x <- df[[j]][rows]
      s <- if (is.list(x)) vapply(x, function(e) paste(format(e), collapse = ", "), "")
           else if (is.character(x) || is.factor(x)) as.character(x)
           else format(x, trim = TRUE)
      s[is.na(x)] <- "NA"
      html_escape(s)
    }, character(length(rows)))
    cells <- matrix(cells, nrow = length(rows))
    body <- vapply(seq_along(rows), function(i) {
      paste0("\t<tr><th scope=row>", html_escape(rn[rows[i]]), "</th>",
             paste0("<td>", cells[i, ], "</td>", collapse = ""), "</tr>")
    }, "")
    if (nr > max_rows) {
      gap <- paste0("\t<tr><th scope=row>&vellip;</th>",
                    paste(rep("<td>&vellip;</td>", length(cols)), collapse = ""), "</tr>")
      half <- max_rows %/% 2L
      body <- c(body[seq_len(half)], gap, body[-seq_len(half)])
    }
    names_ <- colnames(df)[cols]
    if (is.matrix(v) && is.null(colnames(v))) names_ <- rep("", length(cols))
    types <- vapply(cols, function(j) col_type(df[[j]]), "")
    paste0("<table class=\"dataframe\">\n<caption>", what, "</caption>\n<thead>\n",
           "\t<tr><th></th>", paste0("<th scope=col>", html_escape(names_), "</th>", collapse = ""),
           "</tr>\n", if (!is.matrix(v)) paste0("\t<tr><th></th>",
           paste0("<th scope=col>&lt;", types, "&gt;</th>", collapse = ""), "</tr>\n"),
           "</thead>\n<tbody>\n", paste(body, collapse = "\n"), "\n</tbody>\n</table>\n")
  }

  result_line <- function(fields, main) {
    parts <- vapply(names(fields), function(k) paste0("\"", k, "\":", jstr(fields[[k]])), "")
    paste0("R{\"type\":\"result\",", paste(parts, collapse = ","), ",\"is_main_result\":",
           if (main) "true" else "false", "}")
  }

  show_value <- function(v, main) {
    fields <- list(text = paste(utils::capture.output(print(v)), collapse = "\n"))
    if ((is.data.frame(v) || is.matrix(v)) && length(dim(v)) == 2L) {
      html <- tryCatch(html_table(v), error = function(e) NULL)
      if (!is.null(html)) fields$html <- html
    }
    send(result_line(fields, main))
  }

  # ---- plots ----

  # Warnings as they happen (Rscript would keep them for a top level this loop never reaches),
  # worded as R's console words them: the kernel's own eval() is no call of the user's.
  on_warning <- function(w) {
    level <- getOption("warn", 0)
    if (level >= 2) return() # R turns it into an error
    if (level >= 0) {
      cl <- conditionCall(w)
      where <- if (is.null(cl) || identical(cl, eval_call)) ""
               else paste0(" in ", paste(deparse(cl, nlines = 1L), collapse = ""), " ")
      cat(paste0("Warning", where, ": ", conditionMessage(w), "\n"), file = stderr())
    }
    invokeRestart("muffleWarning")
  }
  options(device = function(...) {
    grDevices::png(file.path(plot_dir, "plot-%03d.png"), width = 7, height = 7, units = "in",
                   res = 120)
    plot_dev <<- grDevices::dev.cur()
  })

  flush_plots <- function() {
    if (!is.null(plot_dev) && plot_dev %in% grDevices::dev.list())
      try(grDevices::dev.off(plot_dev), silent = TRUE)
    plot_dev <<- NULL
    for (f in sort(list.files(plot_dir, full.names = TRUE))) {
      size <- file.info(f)$size
      if (!is.na(size) && size > 0)
        send(result_line(list(text = "plot without title",
                              png = b64(readBin(f, "raw", size))), FALSE))
      unlink(f)
    }
  }

  # ---- errors ----

  error_line <- function(name, value, tb) {
    paste0("R{\"type\":\"error\",\"name\":", jstr(name), ",\"value\":", jstr(value),
           ",\"traceback\":", jstr(tb), "}")
  }

  # As IRkernel reports them: name "ERROR", the condition as R prints it, the calls below the
  # cell's expression.
  condition_line <- function(e, calls) {
    # The kernel's own eval() and parse() are no part of the user's code: R's console prints
    # such an error as "Error: ...".
    cl <- conditionCall(e)
    if (!is.null(cl) && (identical(cl, eval_call) || identical(cl[[1L]], quote(parse))))
      e$call <- NULL
    value <- paste(tryCatch(as.character(e), error = function(x) conditionMessage(e)),
                   collapse = "")
    if (!nzchar(value)) value <- paste0("Error: ", conditionMessage(e), "\n")
    tb <- value
    if (length(calls)) {
      fmt <- vapply(calls, function(cl) paste(deparse(cl, nlines = 1L), collapse = ""), "")
      tb <- paste0(value, "Traceback:\n", paste0(seq_along(fmt), ". ", fmt, collapse = "\n"))
    }
    error_line("ERROR", value, tb)
  }

  # ---- execution ----

  eval_depth <- 0L

  eval_call <- quote(eval(expr, envir = .GlobalEnv))

  run_expr <- function(expr) {
    eval_depth <<- sys.nframe()
    withVisible(eval(expr, envir = .GlobalEnv))
  }

  # The user's frames of a condition's call stack: below run_expr's eval, above the handler.
  user_calls <- function(calls) {
    first <- eval_depth + 4L
    last <- length(calls) - 2L
    if (first > last) return(list())
    calls <- calls[first:last]
    Filter(function(cl) !identical(cl[[1L]], quote(.handleSimpleError)) &&
             !identical(cl[[1L]], quote(h)), calls)
  }

  # An interrupt (SIGINT) caught: noted, the value is NULL.
  on_interrupt <- function(e) {
    interrupted <<- TRUE
    NULL
  }

  # Whether the execution ends here, what ends it sent: an interrupt (aborted), or res an error
  # (its condition, with calls).
  ended <- function(res, calls) {
    if (interrupted) {
      send(error_line("ExecutionAborted", "Execution was aborted", ""))
      return(TRUE)
    }
    if (inherits(res, "error")) {
      send(condition_line(res, calls))
      return(TRUE)
    }
    FALSE
  }

  execute <- function(code) {
    count <<- count + 1L
    exprs <- tryCatch(parse(text = code, keep.source = FALSE, encoding = "UTF-8"),
                      error = function(e) e)
    if (inherits(exprs, "error")) {
      send(condition_line(exprs, list()))
      return(invisible())
    }
    n <- length(exprs)
    for (i in seq_len(n)) {
      calls <- list()
      res <- tryCatch(withCallingHandlers(run_expr(exprs[[i]]),
                                          warning = on_warning,
                                          error = function(e) calls <<- sys.calls()),
                      error = function(e) e, interrupt = on_interrupt)
      if (ended(res, user_calls(calls)))
        return(invisible())
      if (isTRUE(res$visible)) {
        r <- tryCatch(show_value(res$value, i == n), error = function(e) e,
                      interrupt = on_interrupt)
        if (ended(r, list()))
          return(invisible())
      }
    }
  }

  set_env <- function(k, v) {
    if (is.na(v)) Sys.unsetenv(k) else do.call(Sys.setenv, structure(list(v), names = k))
  }

  apply_genv <- function(g) {
    for (k in names(genv))
      if (!(k %in% names(g)) && identical(Sys.getenv(k, unset = NA), genv[[k]])) Sys.unsetenv(k)
    for (k in names(g)) set_env(k, g[[k]])
    genv <<- unlist(g)
  }

  handle <- function(req) {
    saved <- list()
    interrupted <<- FALSE
    on.exit(suspendInterrupts({
      for (k in names(saved)) set_env(k, saved[[k]])
      tryCatch(flush_plots(), error = function(e) NULL)
      send("D")
    }))
    if (is.list(req[["genv"]])) apply_genv(req[["genv"]])
    env <- req[["env"]]
    for (k in names(env)) {
      if (!nzchar(k) || !is.character(env[[k]])) next
      if (is.null(saved[[k]])) saved[[k]] <- Sys.getenv(k, unset = NA)
      set_env(k, env[[k]])
    }
    code <- if (is.character(req[["code"]])) req[["code"]] else ""
    execute(code)
  }

  send("Y")
  repeat {
    # An interrupt that arrives while the kernel waits is dropped here, not in the next cell.
    line <- tryCatch(readLines(req_con, n = 1L, encoding = "UTF-8", warn = FALSE),
                     interrupt = function(e) NA)
    if (length(line) == 0L) break
    if (is.na(line[1L])) next
    req <- tryCatch(json_parse(line), error = function(e) NULL, interrupt = function(e) NULL)
    if (!is.list(req)) next
    tryCatch(handle(req), interrupt = function(e) NULL)
  }
  quit(save = "no", status = 0)
})
