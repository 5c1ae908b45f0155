#!/usr/bin/env bash
# End-to-end check of the dashboard as a person uses it: tmux runs the real binary in a
# 120x40 pane; send-keys types, paste-buffer pastes (bracketed), capture-pane reads the screen.
# Usage: Tests/e2e/dashboard-tmux.sh [path/to/receiptdash]
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-.build/debug/receiptdash}
fixtures=Tests/ReceiptCoreTests/Fixtures
session=receiptdash-e2e-$$
socket=receiptdash-e2e-$$
work=$(mktemp -d)
passed=0
failed=0

t() { tmux -L "$socket" "$@"; }
screen() { t capture-pane -t "$session" -p; }
check() { # description, then a command that must succeed
  local what=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $what"; else failed=$((failed + 1)); echo "FAIL $what"; screen | sed 's/^/     | /'; fi
}
wait_for() { # text, timeout in tenths of a second
  for _ in $(seq 1 "${2:-50}"); do screen | grep -qF -- "$1" && return 0; sleep 0.1; done
  return 1
}
wait_gone() { # text, timeout in tenths of a second
  for _ in $(seq 1 "${2:-50}"); do screen | grep -qF -- "$1" || return 0; sleep 0.1; done
  return 1
}
cleanup() {
  t kill-server 2>/dev/null
  for pid in "${simulator_pid:-}" "${receive_pid:-}" "${downstream_pid:-}"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

# A verifyReceipt response whose product id and bundle id carry escape sequences: clear
# screen, set the window title, ring the bell.
printf '%s' '{"status": 0, "receipt": {"bundle_id": "evil.app\u001b[2J", "in_app": [{"transaction_id": "42", "product_id": "evil\u001b]0;pwned\u0007\u001b[31m", "purchase_date_ms": "1700000000000"}]}}' > "$work/evil.json"

# The local verifyReceipt simulator on a free loopback port, for v/V.
"$bin" simulator --port 0 --latency 50 > "$work/simulator.txt" &
simulator_pid=$!
for _ in $(seq 1 50); do grep -q "^sandbox:" "$work/simulator.txt" 2>/dev/null && break; sleep 0.1; done
production_url=$(awk '/^production:/ {print $2}' "$work/simulator.txt")
sandbox_url=$(awk '/^sandbox:/ {print $2}' "$work/simulator.txt")

t new-session -d -s "$session" -x 120 -y 40 \
  "TERM=xterm-256color $bin --at 2026-01-01T00:00:00Z --production-url $production_url --sandbox-url $sandbox_url $fixtures/production.b64 $fixtures/sandbox-2023.der $fixtures/notification-v2.jws $work/evil.json; echo EXIT=\$?; sleep 60"
t set-option -t "$session" -g allow-rename off >/dev/null 2>&1

check "dashboard starts with the inputs listed" wait_for "Receipts [4]"
check "bundle id on screen" wait_for "bundle org.getpure.pure-iphone"
check "product ids of the selected receipt on screen" wait_for "org.getpure.pure.Week"
check "trust verdict shown" wait_for "Trust: valid"

# QA: the receipt list filtered and sorted (f, s), counted in its title.
check "receipts list their file, counts and latest expiry" wait_for "production.b64 0/1/0 2023-10-19"
t send-keys -t "$session" f
check "f opens the receipt filter" wait_for "Filter receipts: "
t send-keys -t "$session" -l 'file:*.der'
t send-keys -t "$session" Enter
check "the filter narrows the list, counted in the title" wait_for "Receipts [1 of 4]"
t send-keys -t "$session" Escape
check "Esc lists every receipt again" wait_for "Receipts [4]"
t send-keys -t "$session" s
check "s sorts the receipts by file" wait_for "Receipts [4] by file"
t send-keys -t "$session" s s s s s s s s
check "after the last column, load order again" wait_gone "Receipts [4] by"
t send-keys -t "$session" e
check "e offers the listed receipts' export" wait_for "Export the 4 receipts listed as JSON to folder:"
t send-keys -t "$session" Tab C-u
t send-keys -t "$session" -l "$work/exports"
mkdir -p "$work/exports"
t send-keys -t "$session" Enter
check "the export's path is said" wait_for "exported 4 receipts to $work/exports/receiptdash-receipts-"
check "the export is mode 600, one CSV line per receipt" bash -c "f=\$(ls $work/exports/*.csv) && [ \"\$(stat -c %a \"\$f\")\" = 600 ] && [ \"\$(wc -l < \"\$f\")\" = 5 ]"

# Verify every receipt online through the simulator (the JWS and the response are not sent).
t send-keys -t "$session" V
check "online verification finishes" wait_for "done 2 · failed 0"
check "progress shows all sent receipts" wait_for "2/2 online"
check "Apple's answer in the Status pane" wait_for "Online: status 0 Valid"
check "the sandbox hop is logged" wait_for "status 0 Valid (Sandbox"

# Paste a receipt with bracketed paste.
t send-keys -t "$session" p
check "paste box opens" wait_for "Paste receipts"
t load-buffer -b receipt "$fixtures/sandbox-2023.der.b64" 2>/dev/null || { base64 -w 76 "$fixtures/sandbox-2023.der" > "$work/paste.b64"; t load-buffer -b receipt "$work/paste.b64"; }
t paste-buffer -p -b receipt -t "$session"
check "pasted text arrives in the box" wait_for " lines"
t send-keys -t "$session" Enter
check "pasted receipt decoded" wait_for "pasted 1 input"
check "pasted receipt listed" wait_for "Receipts [5]"
check "pasted receipt's bundle id shown" wait_for "com.hannesoid.Purchas"

# Help page: the focused view's keys, paged; only Esc, q or ? close it.
t send-keys -t "$session" '?'
check "? shows the keys" wait_for "copy the focused row as JSON"
t send-keys -t "$session" x
check "a key that is not the page's leaves it open" wait_for "Esc q ? close"
t send-keys -t "$session" Escape
check "help closes" wait_gone "Esc q ? close"

# Resize to below the minimum and back.
t resize-window -t "$session" -x 60 -y 15
check "too small screen" wait_for "Terminal too small: 60×15"
t resize-window -t "$session" -x 120 -y 40
check "full layout again after resize" wait_for "Receipts [5]"
# The facts survive small and large screens: 80×24 keeps each purchase's expiry and state,
# 200×50 lists the receipts' environment and counts too, whole file names and their bundle.
t resize-window -t "$session" -x 80 -y 24
check "80×24 keeps the purchases' expiry and state" wait_for "Expires          State"
check "80×24 keeps the receipts' latest expiry, four columns to the right" wait_for "File    4▶ Expires"
# At 80×24 the help page scrolls to its end: nothing is out of reach.
t send-keys -t "$session" '?'
check "80×24: ? opens the help page, its position and keys in its last line" wait_for "↑↓ jk PgUp PgDn g G · / search"
t send-keys -t "$session" G
check "80×24: G pages to the end, where q quits" wait_for "q        quit"
t send-keys -t "$session" /
t send-keys -t "$session" -l 'export'
t send-keys -t "$session" Enter
check "80×24: / finds the export key" wait_for "e        export the view"
t send-keys -t "$session" q
check "80×24: q closes the help" wait_gone "Esc q ? close"
# A table wider than its pane scrolls sideways (the file name stays): f Esc focuses Receipts.
t send-keys -t "$session" f Escape Right
check "80×24: → shows the receipts' verdict, a column that did not fit" wait_for "◀1 3▶ Verdict"
check "80×24: the verdict beside the file name, cut to its end" wait_for "…ification-v2 valid"
t send-keys -t "$session" Left
check "80×24: ← scrolls back to the expiry" wait_for "File    4▶ Expires"
# In Purchases the column cursor moves, and the table scrolls to keep it on screen.
t send-keys -t "$session" Tab Left Left
check "80×24: the cursor on Transaction scrolls the purchases to show it" wait_for "◀3 1▶ Transaction      Original"
t send-keys -t "$session" Right Right
check "80×24: → → to Purchased, the last column" wait_for "◀4 Original         Purchased"
t send-keys -t "$session" f Escape
check "80×24: f Esc gives Receipts the keys again" wait_for "receipt filter cleared"
t resize-window -t "$session" -x 200 -y 50
check "200×50 shows every purchase column" wait_for "Type        Transaction      Original         Purchased"
check "200×50 shows the receipts' verdict, environment, bundle and counts" wait_for "Verdict Env   Bundle"
check "200×50 shows whole file names and the bundle" wait_for "notification-v2.jws   valid   Sbx   com.loki-project.loki-messenger"
t send-keys -t "$session" '?' G
check "200×50: the help page pages to its end too, where q quits" wait_for "q        quit"
check "200×50: its last line says where it is" wait_for "↑↓ jk PgUp PgDn g G · / search"
t send-keys -t "$session" '?'
check "200×50: ? closes the help" wait_gone "Esc q ? close"
t resize-window -t "$session" -x 120 -y 40
check "120×40 again" wait_for "File        3▶ A/E/R Expires"

# Copy inside tmux goes through tmux (an OSC 52 sequence would need allow-passthrough): its
# buffer holds the transaction ID the message names.
t send-keys -t "$session" g Tab Left Left y
check "y inside tmux says the copy went to tmux's buffer" wait_for "to tmux's buffer"
copied=$(t show-buffer 2>/dev/null)
check "tmux's buffer holds a transaction ID" bash -c "[[ '$copied' =~ ^[0-9]+\$ ]]"
check "the message names what tmux's buffer holds" wait_for "copied $copied to tmux's buffer"
t send-keys -t "$session" BTab

# The receipt with escape sequences: shown escaped, the terminal untouched.
t send-keys -t "$session" G k
check "hostile receipt listed escaped" wait_for 'evil.app\x1b[2J'
check "hostile receipt selected" wait_for 'bundle evil.app\x1b[2J'
t send-keys -t "$session" Tab
check "escape sequence shown escaped in the table" wait_for 'evil\x1b]0;pwned\x07'
check "screen not cleared by the receipt" wait_for "receiptdash │"
check "window title not changed by the receipt" bash -c "[ \"\$(tmux -L $socket display-message -p -t $session '#{pane_title}')\" != pwned ]"

# Quit: exit status 0 and the terminal restored (alternate screen off, cursor back).
t send-keys -t "$session" q
check "q exits with status 0" wait_for "EXIT=0"
check "alternate screen left" bash -c "[ \"\$(tmux -L $socket display-message -p -t $session '#{alternate_on}')\" = 0 ]"

# Ctrl-C and SIGTERM: exit status 130 / 143 and the terminal as found. run.sh runs the
# dashboard in the foreground (recording its pid), prints its exit status, then reads one line
# and prints it escaped: a paste arrives there wrapped in ESC [200~ … ESC [201~ if the
# dashboard left bracketed paste on.
cat > "$work/run.sh" <<'SCRIPT'
#!/usr/bin/env bash
trap : INT  # the shell outlives a Ctrl-C meant for the dashboard (a handler, unlike '', is not inherited)
pidfile=$1
shift
bash -c 'echo $$ > "$0"; exec "$@"' "$pidfile" "$@"
echo "EXIT=$?"
IFS= read -r line
printf 'READ=%q\n' "$line"
sleep 60
SCRIPT
restored() { # session: alternate screen left, cursor shown, bracketed paste off
  local s=$1
  [ "$(t display-message -p -t "$s" '#{alternate_on}')" = 0 ] || { echo "     alternate screen still on"; return 1; }
  [ "$(t display-message -p -t "$s" '#{cursor_flag}')" = 1 ] || { echo "     cursor hidden"; return 1; }
  t set-buffer -b probe "plain"
  t paste-buffer -p -b probe -t "$s"
  t send-keys -t "$s" Enter
  for _ in $(seq 1 30); do t capture-pane -t "$s" -p | grep -q '^READ=' && break; sleep 0.1; done
  t capture-pane -t "$s" -p | grep -qxF 'READ=plain' || { echo "     paste arrived as: $(t capture-pane -t "$s" -p | grep '^READ=')"; return 1; }
}
for how in INT TERM; do
  session=signal-$how
  t new-session -d -s "$session" -x 120 -y 40 \
    "exec bash $work/run.sh $work/dash-$how.pid env TERM=xterm-256color $bin --at 2026-01-01T00:00:00Z $fixtures/production.b64"
  check "dashboard up for SIG$how" wait_for "Receipts [1]"
  if [ "$how" = INT ]; then t send-keys -t "$session" C-c; else kill -TERM "$(cat "$work/dash-$how.pid")"; fi
  expected=$([ "$how" = INT ] && echo 130 || echo 143)
  check "SIG$how exits with status $expected" wait_for "EXIT=$expected"
  check "SIG$how leaves the terminal restored (alternate screen, cursor, bracketed paste)" restored "$session"
done

# The terminal goes away: the dashboard must not outlive it (it was once found at 100% CPU,
# polling a dead terminal). hangup.sh runs it and records its pid and exit status; the wrapper
# survives the hang-up to write the status. "ignore" leaves SIGHUP ignored (as nohup does), so
# only the hang-up itself can end it; "background" runs it as `timeout 60 receiptdash` does, in
# a background process group, which the hang-up's SIGHUP never reaches.
cat > "$work/hangup.sh" <<'SCRIPT'
#!/usr/bin/env bash
mode=$1 pidfile=$2 statusfile=$3
shift 3
if [ "$mode" = ignore ]; then
  trap '' HUP
  bash -c 'echo $$ > "$0"; exec "$@"' "$pidfile" "$@"
else
  trap : HUP  # a handler, not inherited: timeout and the dashboard get SIGHUP as usual
  timeout 60 bash -c 'echo $$ > "$0"; exec "$@"' "$pidfile" "$@"
fi
echo $? > "$statusfile"
SCRIPT
gone() { # pidfile: the process it names is gone within 30 s (a hang is what this bounds)
  local pid
  pid=$(cat "$1" 2>/dev/null) || { echo "     no pid recorded"; return 1; }
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  echo "     still running: $(ps -o stat=,pcpu= -p "$pid")"
  return 1
}
status_is() { # file, status: written with that status within 30 s
  for _ in $(seq 1 300); do [ -s "$1" ] && break; sleep 0.1; done
  [ "$(cat "$1" 2>/dev/null)" = "$2" ] || { echo "     exit status: $(cat "$1" 2>/dev/null || echo none)"; return 1; }
}
stopped() { # pidfile: the process is stopped (job control) within 30 s, not spinning
  local pid
  pid=$(cat "$1")
  for _ in $(seq 1 300); do case "$(ps -o stat= -p "$pid")" in T*) return 0 ;; esac; sleep 0.1; done
  echo "     state: $(ps -o stat=,pcpu= -p "$pid")"
  return 1
}
for how in ignore background; do
  session=hangup-$how
  t new-session -d -s "$session" -x 120 -y 40 \
    "bash $work/hangup.sh $how $work/hangup-$how.pid $work/hangup-$how.status env TERM=xterm-256color $bin --at 2026-01-01T00:00:00Z $fixtures/production.b64"
  check "dashboard up for the hang-up ($how)" wait_for "Receipts [1]"
  t kill-session -t "$session"
  check "the terminal killed ($how): the dashboard is gone" gone "$work/hangup-$how.pid"
  check "the terminal killed ($how): exit status 129, as on SIGHUP" status_is "$work/hangup-$how.status" 129
done
# In a background process group a key typed at the terminal is not the dashboard's: it stops
# (as a background read does) instead of failing the read thousands of times a second; continued
# while still in the background, it cannot have its terminal and ends, the terminal restored.
session=hangup-stop
t new-session -d -s "$session" -x 120 -y 40 \
  "bash $work/hangup.sh background $work/stop.pid $work/stop.status env TERM=xterm-256color $bin --at 2026-01-01T00:00:00Z $fixtures/production.b64; sleep 60"
check "dashboard up in a background process group" wait_for "Receipts [1]"
t send-keys -t "$session" j
check "a key typed in the background stops it (SIGTTIN)" stopped "$work/stop.pid"
kill -CONT "$(cat "$work/stop.pid")"
check "continued in the background, it ends" gone "$work/stop.pid"
check "with exit status 129" status_is "$work/stop.status" 129
check "and the alternate screen left" bash -c "[ \"\$(tmux -L $socket display-message -p -t $session '#{alternate_on}')\" = 0 ]"

# Characters whose width the old table got wrong (U+1F321, U+2764 U+FE0F): the product id is
# drawn whole, with no gap, and the next column starts where it does in a plain row.
heart=$(printf '\xe2\x9d\xa4\xef\xb8\x8f')        # U+2764 U+FE0F, as bytes whatever the locale
thermometer=$(printf '\xf0\x9f\x8c\xa1')             # U+1F321
product="pro.$heart.$thermometer.weekly"
# On screen without the U+FE0F: the backend leaves it out so that no terminal draws the heart
# two columns wide where ncurses (wcwidth) counts one.
drawn="pro.$(printf '\xe2\x9d\xa4').$thermometer.weekly"
printf '{"status": 0, "receipt": {"bundle_id": "com.example.widths", "in_app": [{"transaction_id": "1000000001", "product_id": "%s", "purchase_date_ms": "1700000000000"}, {"transaction_id": "1000000002", "product_id": "pro.plain.weekly", "purchase_date_ms": "1700000000000"}]}}' "$product" > "$work/widths.json"
t new-session -d -s widths -x 120 -y 40 "TERM=xterm-256color $bin --at 2026-01-01T00:00:00Z $work/widths.json; echo EXIT=\$?; sleep 60"
session=widths
check "receipt with emoji product ids listed" wait_for "com.example.widths"
check "the product id is drawn whole" wait_for "$drawn"
columns_before() { # text: display columns before it on its row (wcwidth, as the terminal counts)
  screen | grep -F -- "$1" | head -1 | awk -v m="$1" '{ print substr($0, 1, index($0, m) - 1) }' | LC_ALL=C.UTF-8 wc -L
}
check "the next column lines up with a plain row" \
  bash -c "[ -n \"\$1\" ] && [ \"\$1\" = \"\$2\" ] || { echo \"     1000000001 at \$1, 1000000002 at \$2\"; false; }" _ \
  "$(columns_before 1000000001)" "$(columns_before 1000000002)"
t send-keys -t "$session" q
check "the widths dashboard quits cleanly" wait_for "EXIT=0"

# On-call: a validator (watch --verify) writes the audit database; a second dashboard follows
# it read-only and shows the same feed and the live metrics.
mkdir -p "$work/incoming"
"$bin" watch --db "$work/audit.sqlite" --verify --interval 0.2 --production-url "$production_url" --sandbox-url "$sandbox_url" \
  "$work/incoming" > "$work/watch.txt" 2>&1 &
watch_pid=$!
for _ in $(seq 1 50); do [ -e "$work/audit.sqlite" ] && break; sleep 0.1; done
t new-session -d -s follower -x 140 -y 42 "TERM=xterm-256color $bin --db $work/audit.sqlite --follow; echo EXIT=\$?; sleep 60"
session=follower
check "follower attaches read-only" wait_for "following $work/audit.sq"
cp "$fixtures/production.b64" "$work/incoming/a.b64"
cp "$fixtures/sandbox-2023.der" "$work/incoming/b.der"
check "the watched receipts appear in the follower" wait_for "b.der          Sbx   0/1/0 2023-02-22"
check "their results arrive" wait_for "answered 2 · failed 0"
check "the metrics pane shows the status mix" wait_for "status 0: 2"
t send-keys -t "$session" q
check "the follower quits cleanly" wait_for "EXIT=0"
kill "$watch_pid" 2>/dev/null

# On-call: a receiver stores App Store Server Notifications; a dashboard follows its database
# and shows each one as it arrives (genuine Apple-signed notifications, posted as Apple does).
notes=Tests/ServiceTestSupport/Fixtures/notifications
post() { # file holding a JWS, or - for a raw body on stdin; prints the HTTP status
  if [ "$2" = "-" ]; then body=$(cat); else body="{\"signedPayload\":\"$(tr -d '[:space:]' < "$notes/$2")\"}"; fi
  curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$body" "$1"
}
# Apple's genuine notifications here are sandbox ones signed in 2025: the gates say so.
# A receiver on a free port storing into $1 (its output in $2.txt and $2.log; more flags
# after): its URL in $receive_url, its pid in $receive_pid.
start_receiver() {
  local db=$1 out=$2
  shift 2
  "$bin" receive --port 0 --metrics-port none --db "$db" --bundle-id com.loki-project.loki-messenger \
    --environment sandbox --max-age none "$@" > "$out.txt" 2> "$out.log" &
  receive_pid=$!
  for _ in $(seq 1 100); do grep -q "receiving App Store" "$out.txt" 2>/dev/null && break; sleep 0.1; done
  receive_url=$(grep -o 'http://[0-9.:]*/notifications' "$out.txt")
}
start_receiver "$work/notify.sqlite" "$work/receive"
t new-session -d -s notify -x 140 -y 42 "TERM=xterm-256color $bin --db $work/notify.sqlite --follow --expect-every 1h; echo EXIT=\$?; sleep 60"
session=notify
check "the follower shows an empty Notifications pane" wait_for "Notifications [0] · following $work/notify.sq"
check "a genuine notification is stored (200)" test "$(post "$receive_url" session-pro_00_DID_RENEW.jws)" = 200
check "it appears in the follower, explained" wait_for "DID_RENEW: renewed: access continues until"
check "a second one is stored (200)" test "$(post "$receive_url" session-pro_03_EXPIRED_VOLUNTARY.jws)" = 200
check "the pane counts two" wait_for "Notifications [2]"
check "Apple delivering one again is answered 200" test "$(post "$receive_url" session-pro_00_DID_RENEW.jws)" = 200
check "the redelivery shows on its row, counted once" wait_for "×2"
check "garbage is refused (400)" test "$(printf 'not json' | post "$receive_url" -)" = 400
check "the refusal is counted in the pane, by reason" wait_for "refused 1 (not-json 1)"
t send-keys -t "$session" Tab Tab Tab Tab Enter
check "Enter shows the decoded payload with its trust" wait_for "Trust: valid" 50
check "and each nested token with its own steps" wait_for "Trust of data.signedTransactionInfo: valid"
t send-keys -t "$session" Escape q
check "the notifications follower quits cleanly" wait_for "EXIT=0"
kill "$receive_pid" 2>/dev/null

# On call at a glance (80x24): a receiver forwards to two downstreams, one that takes
# deliveries (204) and one that fails them (500); the follower shows the hour's traffic as a
# sparkline and each target's delivered/pending/dead counts.
python3 -c '
import http.server as h, sys
class H(h.BaseHTTPRequestHandler):
    def do_POST(s):
        s.rfile.read(int(s.headers.get("Content-Length", 0)))
        s.send_response(204 if s.path == "/ok" else 500)
        s.send_header("Content-Length", "0")
        s.end_headers()
    def log_message(s, *a): pass
server = h.HTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()' > "$work/downstream.txt" &
downstream_pid=$!
for _ in $(seq 1 50); do [ -s "$work/downstream.txt" ] && break; sleep 0.1; done
downstream="http://127.0.0.1:$(cat "$work/downstream.txt")"
echo "whsec_$(head -c 32 /dev/urandom | base64)" > "$work/forward.secret"
chmod 600 "$work/forward.secret"
start_receiver "$work/forward.sqlite" "$work/forward-receive" \
  --forward "$downstream/ok" --forward "$downstream/fail" --forward-secret-file "$work/forward.secret"
forward_url=$receive_url
t new-session -d -s glance -x 80 -y 24 "TERM=xterm-256color $bin --db $work/forward.sqlite --follow --expect-every 1h; echo EXIT=\$?; sleep 60"
session=glance
check "the glance follower shows an empty hour" wait_for "peak 0 · 0/h"
check "and no refund request open" wait_for "refund requests: none open" 100
check "a notification to forward is stored (200)" test "$(post "$forward_url" session-pro_00_DID_RENEW.jws)" = 200
check "the sparkline counts it in this minute" wait_for "█ peak 1 · 1/h" 50
check "the target that takes it reads delivered" wait_for "/ok    delivered 1 · pending 0 · dead 0" 150
check "the failing target reads pending, with the oldest one's age" bash -c "tmux -L $socket capture-pane -t glance -p | grep -qE '/fail  delivered 0 · pending 1 \(oldest [0-9]+s\) · dead 0'"
check "the on-call lines fit 80 columns" bash -c "! tmux -L $socket capture-pane -t glance -p | grep -q '…) · dead'"
check "outbox lines name the type and say the last outcome once" bash -c "\"$bin\" notifications --db $work/forward.sqlite --outbox | grep -qE 'pending +DID_RENEW .* → $downstream/fail +\([0-9]+ attempts?(, last)?: HTTP 500'"
check "and never the status twice" bash -c "! \"$bin\" notifications --db $work/forward.sqlite --outbox | grep -q 'HTTP 500, HTTP 500'"
t send-keys -t "$session" q
check "the glance follower quits cleanly" wait_for "EXIT=0"
kill "$receive_pid" "$downstream_pid" 2>/dev/null

# The dashboard embeds the receiver (--receive) and raises a banner when none arrives in time.
t new-session -d -s embedded -x 140 -y 42 "TERM=xterm-256color $bin --receive 0 --bundle-id com.loki-project.loki-messenger --receive-environment sandbox --receive-max-age none --db $work/embedded.sqlite --expect-every 2s; echo EXIT=\$?; sleep 60"
session=embedded
check "the embedded receiver says where it listens" wait_for "receiving at http://127.0.0.1:"
check "on call with nothing loaded, the empty receipt panes fold away" bash -c "! tmux -L $socket capture-pane -t embedded -p | grep -qF 'Receipts ['"
embedded_url=$(screen | grep -o 'http://127.0.0.1:[0-9]*/notifications' | head -n 1)
check "no notification for 2 s raises the banner" wait_for "NO NOTIFICATIONS for" 60
check "a notification posted to the dashboard is stored (200)" test "$(post "$embedded_url" session-pro_12_CONSUMPTION_REQUEST.jws)" = 200
check "it is listed at once, with the refund request's reason and the time to answer" wait_for "refund asked (unintended purchase): the 12 h to answer have passed"
check "the banner goes when one arrives" wait_gone "NO NOTIFICATIONS for" 20
check "the on-call lines count the refund request open, its deadline passed" wait_for "refund requests: 1 open · a deadline passed at" 100
t send-keys -t "$session" q
check "the receiving dashboard quits cleanly" wait_for "EXIT=0"
check "what it acknowledged is in its database" bash -c "\"$bin\" notifications --db $work/embedded.sqlite --format csv | grep -qF CONSUMPTION_REQUEST"

# A team on PostgreSQL (when a test server runs, as in CI): a dashboard on one terminal follows the
# shared trail and shows, within a second, a receipt another process records there (LISTEN/NOTIFY).
if [ -n "${RECEIPTDASH_TEST_POSTGRES_URL:-}" ]; then
  pgdb="receiptdash_e2e_$$"
  psql "$RECEIPTDASH_TEST_POSTGRES_URL" -q -c "CREATE DATABASE $pgdb" >/dev/null
  pgurl="${RECEIPTDASH_TEST_POSTGRES_URL%/*}/$pgdb"
  "$bin" db migrate --db "$pgurl" >/dev/null
  t new-session -d -s pgfollow -x 140 -y 42 "TERM=xterm-256color $bin --db $pgurl --follow; echo EXIT=\$?; sleep 60"
  session=pgfollow
  check "the PostgreSQL follower attaches (URL shown without a password)" wait_for "following postgres://receiptdash@127.0.0."
  mkdir -p "$work/pgdrop"
  cp "$fixtures/sandbox-2023.der" "$work/pgdrop/a.der"
  "$bin" watch --once --db "$pgurl" "$work/pgdrop" >/dev/null
  check "a receipt another process records shows within a second" wait_for "com.hannesoid.Purchas" 10
  t send-keys -t "$session" q
  check "the PostgreSQL follower quits cleanly" wait_for "EXIT=0"
fi

# QA: the dashboard itself watches a folder and follows a log; new receipts appear as they land.
mkdir -p "$work/drop"
: > "$work/app.log"
t new-session -d -s watcher -x 120 -y 40 "TERM=xterm-256color $bin --at 2026-01-01T00:00:00Z --watch $work/drop --watch $work/app.log; echo EXIT=\$?; sleep 60"
session=watcher
check "the watcher says what it watches" wait_for "watching $work/drop"
cp "$fixtures/sandbox-2023.der" "$work/drop/new.der"
check "a file dropped in the folder appears" wait_for "Receipts [1]"
check "its bundle id is shown" wait_for "com.hannesoid.Purchas"
{ echo "INFO unrelated line"; tr -d '\n' < "$fixtures/production.b64"; echo; } >> "$work/app.log"
check "a receipt logged to the followed file appears" wait_for "Receipts [2]"
check "unrelated log lines are skipped, not listed as inputs" bash -c "! tmux -L $socket capture-pane -t watcher -p | grep -qF 'Receipts [3]'"
t send-keys -t "$session" q
check "the watcher quits cleanly" wait_for "EXIT=0"

# Support: look a customer up through the App Store Server API simulator with `l` (order ID),
# and see `l` explain itself when no credentials are given.
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$work/key.p8" 2>/dev/null
chmod 600 "$work/key.p8"
"$bin" simulator --port 0 --api-key-file "$work/key.p8" --api-root-out "$work/sim-root.der" --api-fault-rate 0.3 --seed 7 > "$work/api.txt" &
api_pid=$!
for _ in $(seq 1 50); do grep -q "^API data:" "$work/api.txt" 2>/dev/null && break; sleep 0.1; done
api_production=$(awk '/^App Store Server API production:/ {print $NF}' "$work/api.txt")
api_sandbox=$(awk '/^App Store Server API sandbox:/ {print $NF}' "$work/api.txt")
# A dashboard in tmux session $1 with the simulator's credentials, then any other flags.
lookup_dashboard() {
  local name=$1
  shift
  t new-session -d -s "$name" -x 140 -y 42 "TERM=xterm-256color XDG_DATA_HOME=$work/xdg $bin --issuer-id 57246542-96fe-1a63-e053-0824d011072a --key-id 2X9R4HXF34 --private-key-file $work/key.p8 --bundle-id com.example.receiptdash --root-ca $work/sim-root.der --api-production-url $api_production --api-sandbox-url $api_sandbox $* $fixtures/production.b64; echo EXIT=\$?; sleep 60"
}
# Looks up order MQ5X7ABCDE in session $1 and extends its monthly subscription by $2 days ($3
# names the run in the check lines).
extend_from_dashboard() {
  local days=$2 what=$3
  session=$1
  check "dashboard up$what" wait_for "Receipts [1]"
  t send-keys -t "$session" l
  check "l opens the look-up box$what" wait_for "Look up order ID or transaction ID"
  t send-keys -t "$session" -l MQ5X7ABCDE
  t send-keys -t "$session" Enter
  check "the answer is a new api input$what" wait_for "lookup order MQ5X7ABCDE" 150
  # The answer opens the Customer view: the answer on top, the issues, one timeline.
  check "l's answer opens the Customer view$what" wait_for "Timeline (" 150
  check "the view's answer names the active subscription$what" wait_for "com.example.receiptdash.pro.monthly: active"
  check "the view lists the refund no notification told$what" wait_for "no REFUND notification is stored"
  t send-keys -t "$session" Escape
  check "its transactions fill the Purchases pane$what" wait_for "Purchases [5]" 150
  if [ -z "$what" ]; then
    check "the refunded consumable is listed" wait_for "consumable  2000000900000010" 50
    check "the Status pane names the test root" wait_for "Trust: all 7 signed items are test: chains" 50
    check "the injected faults were retried, and the Log says so" bash -c "tmux -L $socket capture-pane -t lookup -p | grep -qE 'rate limited: waiting until|retrying '"
  fi
  # x opens the form, the days and Enter show the plan, y sends.
  t send-keys -t "$session" Tab Tab
  check "Tab reaches the Subscriptions pane, which offers x$what" wait_for "x extend"
  t send-keys -t "$session" x
  check "x opens the extend form$what" wait_for "Extend renewal date"
  t send-keys -t "$session" "$days" Enter
  check "Enter shows the plan with the new expiry$what" wait_for "(+$days days)"
  check "the plan names its request id and asks y/N$what" wait_for "y sends it"
  t send-keys -t "$session" y
  check "y sends it and the Log says it was extended$what" wait_for "extended 2000000900000001 by $days days" 150
  # The customer asked again replaces its row in place, and u shows the write in its story.
  check "the customer is asked again after the write$what" wait_for "lookup order MQ5X7ABCDE (updated)" 150
  check "one row per customer, never a stale copy$what" wait_for "Receipts [2]"
  check "the Log line carries its time$what" bash -c "tmux -L $socket capture-pane -t $session -p | grep -qE '[0-9]{2}:[0-9]{2}:[0-9]{2} lookup order MQ5X7ABCDE \(updated\)'"
  t send-keys -t "$session" u
  check "u opens the Customer view with the extension in its timeline$what" wait_for "extension           we extended the renewal date: success (HTTP 200)" 50
  t send-keys -t "$session" Escape q
  check "the dashboard quits cleanly$what" wait_for "EXIT=0"
}
lookup_dashboard lookup --db "$work/lookup.sqlite"
extend_from_dashboard lookup 7 ""
check "the look-up is in the audit database, found by transaction id" bash -c "\"$bin\" history --db $work/lookup.sqlite --transaction-id 2000000900000010 | grep -qF 'api com.example.receiptdash Production done'"
check "the extension is in the audit database's actions" bash -c "\"$bin\" history --actions --db $work/lookup.sqlite | grep -qF 'extend Production original 2000000900000001 com.example.receiptdash.pro.monthly → success'"
# Without --db, a write is recorded all the same: in the default audit store, before it leaves.
lookup_dashboard nodb
extend_from_dashboard nodb 3 " (no --db)"
check "the write is in the default audit store" bash -c "\"$bin\" history --actions --db $work/xdg/receiptdash/audit.sqlite | grep -qF 'extend Production original 2000000900000001 com.example.receiptdash.pro.monthly → success'"
# Today's payloads: the demo's second customer has a monthly plan under a 12-month commitment,
# first bought with a win-back offer, and a prorated refund; Enter on the purchase shows them.
lookup_dashboard today
session=today
check "dashboard up for today's payloads" wait_for "Receipts [1]"
t send-keys -t "$session" l
check "l opens the look-up box again" wait_for "Look up order ID or transaction ID"
t send-keys -t "$session" -l MQ5X7KLMNO
t send-keys -t "$session" Enter
check "the second customer is a new api input" wait_for "lookup order MQ5X7KLMNO" 150
check "the second customer's answer opens the Customer view" wait_for "Timeline (" 150
t send-keys -t "$session" Escape
check "its six purchases fill the Purchases pane" wait_for "Purchases [6]" 150
check "the commitment plan is explained" wait_for "billed monthly under a 12-month" 50
check "the prorated refund has its state" wait_for "refunded-prorated" 50
t send-keys -t "$session" Tab Enter
check "Enter on the commitment plan's first purchase shows its commitment" wait_for "commitment_info               billing period 1 of 12, commitment ends" 50
check "and its billing plan in words" wait_for "billing_plan_type             MONTHLY (billed monthly under a 12-month commitment)"
check "and the win-back offer it was bought with" wait_for "offer_type                    4 (win-back offer)"
check "and the offer's length in words" wait_for "offer_period                  P1M (1 month)"
t send-keys -t "$session" Escape q
check "the today's-payloads dashboard quits cleanly" wait_for "EXIT=0"
# Data that is not genuine (the simulator's root not given): a banner opens the Customer view,
# the extend plan says INVALID, y is refused in a pop-up (untrusted-data) and nothing is sent.
t new-session -d -s untrusted -x 140 -y 42 "TERM=xterm-256color XDG_DATA_HOME=$work/xdg $bin --issuer-id 57246542-96fe-1a63-e053-0824d011072a --key-id 2X9R4HXF34 --private-key-file $work/key.p8 --bundle-id com.example.receiptdash --api-production-url $api_production --api-sandbox-url $api_sandbox --db $work/untrusted.sqlite $fixtures/production.b64; echo EXIT=\$?; sleep 60"
session=untrusted
check "dashboard up on data it cannot trust" wait_for "Receipts [1]"
t send-keys -t "$session" l
t send-keys -t "$session" -l MQ5X7ABCDE
t send-keys -t "$session" Enter
check "the Customer view opens with the not-genuine banner" wait_for "⚠ NOT GENUINE:" 150
check "each event shows its trust" wait_for ", invalid]" 50
t send-keys -t "$session" x
check "x from the view opens the extend form" wait_for "Days (1-90):" 50
t send-keys -t "$session" 3 Enter
check "the plan says the data is not genuine" wait_for "data: INVALID (not genuine)"
check "and how to go ahead" wait_for "F sends it anyway (as --force-untrusted)"
t send-keys -t "$session" y
check "y is refused in a pop-up with the commands' code" wait_for "Not sent (untrusted-data)"
t send-keys -t "$session" Escape
check "any key closes the pop-up" wait_gone "any key closes this"
check "and the plan is still open" wait_for "data: INVALID (not genuine)"
t send-keys -t "$session" Escape
check "nothing was sent or recorded" bash -c "! \"$bin\" history --actions --db $work/untrusted.sqlite 2>/dev/null | grep -q extend"
t send-keys -t "$session" Escape q
check "the untrusted dashboard quits cleanly" wait_for "EXIT=0"
kill "$api_pid" 2>/dev/null
t new-session -d -s nolookup -x 140 -y 42 "TERM=xterm-256color env -u RECEIPTDASH_API_ISSUER_ID $bin $fixtures/production.b64; echo EXIT=\$?; sleep 60"
session=nolookup
check "dashboard up without credentials" wait_for "Receipts [1]"
t send-keys -t "$session" l
check "l says what to configure" wait_for "RECEIPTDASH_API_" 30
t send-keys -t "$session" q

# QA at scale: a folder's inputs keep only their line; the selected one is read again from its
# file. One deleted after loading keeps its line and says why its purchases are missing.
mkdir -p "$work/qa"
for n in 1 2 3; do cp "$fixtures/production.b64" "$work/qa/copy-$n.b64"; done
t new-session -d -s qa -x 120 -y 40 "TERM=xterm-256color $bin --at 2026-01-01T00:00:00Z $work/qa; echo EXIT=\$?; sleep 60"
session=qa
check "a folder loads, every input counted" wait_for "Receipts [3]"
check "the first one's purchases are read again and shown" wait_for "Purchases [4]"
rm "$work/qa/copy-2.b64"
t send-keys -t "$session" j
check "a file deleted since loading keeps its line and says so" wait_for "could not read $work/qa/copy-2.b64 again"
check "its line still reads as loaded, its purchases not shown" wait_for "Purchases [0]"
t send-keys -t "$session" j
check "the next one shows its purchases again" wait_for "Purchases [4]"
t send-keys -t "$session" q
check "the QA dashboard quits cleanly" wait_for "EXIT=0"

echo "e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
