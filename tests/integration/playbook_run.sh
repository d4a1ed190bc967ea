#!/usr/bin/env bash
# `xftctl playbook run FILE` with a user's playbook on 2 test hosts: the
# exact line per task and host and the recap, idempotency through creates /
# changed_when, a failing host leaving the play (exit 2), --json, and a
# broken playbook refused with file:line:col before any host is touched.
source "$XFT_SOURCE_DIR/tests/integration/lib.sh"

start_cluster 2
book="$TEST_TMP/site.yaml"
cat >"$book" <<'YAML'
name: site
tasks:
  - name: a directory
    file: {path: /root/site, state: directory, mode: "0750"}
  - name: a config file
    copy: {dest: /root/site/app.conf, content: "host={{inventory_hostname}} addr={{address}}\n", mode: "0640"}
  - name: initialise once
    command: {cmd: "date > /root/site/initialised", creates: /root/site/initialised}
  - name: read it back
    command: cat /root/site/app.conf
    register: conf
    changed_when: "false"
  - name: fails on h02 only
    shell: "test {{inventory_hostname}} = h01"
    when: "'h0' in conf.stdout"
  - name: after the failure
    command: "true"
    changed_when: "false"
YAML

xft playbook run "$book" --accept-new-host-keys
assert_eq 2 "$RC" "exit code with a failing host; err: $ERR"
expected="PLAY [site] on 2 hosts
CONNECT
  h01: ok
  h02: ok
TASK [a directory]
  h01: changed: /root/site: created
  h02: changed: /root/site: created
TASK [a config file]
  h01: changed: /root/site/app.conf: created
  h02: changed: /root/site/app.conf: created
TASK [initialise once]
  h01: changed
  h02: changed
TASK [read it back]
  h01: ok
  h02: ok
TASK [fails on h02 only]
  h01: changed
  h02: failed: exit 1
TASK [after the failure]
  h01: ok
RECAP
  h01   ok=2   changed=4   failed=0   unreachable=0   skipped=0
  h02   ok=1   changed=3   failed=1   unreachable=0   skipped=0"
assert_eq "$expected" "$OUT" "first run output"
assert_eq "host=h02 addr=$HOST_H02_ADDR" "$(host_run h02 cat /root/site/app.conf)" "rendered file on h02"
assert_eq "640" "$(host_run h02 stat -c %a /root/site/app.conf)" "mode of the file"

step "second run, h01 only: only the unguarded command changes"
xft playbook run "$book" --hosts h01 --json
assert_eq 0 "$RC" "second run exit code"
assert_eq '{"changed":1,"failed":0,"ok":5,"skipped":0,"unreachable":0}' "$(jq -c '.recap.h01' <<<"$OUT")" "json recap"
assert_eq "ok" "$(jq -r '.tasks[] | select(.name == "initialise once") | .results[0].status' <<<"$OUT")" "creates guard"

step "a broken playbook is refused before any host is touched"
printf 'name: broken\ntasks:\n  - name: x\n    copy: {dest: /a, contnet: hi}\n' >"$TEST_TMP/broken.yaml"
xft playbook run "$TEST_TMP/broken.yaml"
assert_eq 1 "$RC" "exit code of a broken playbook"
assert_eq "xftctl: $TEST_TMP/broken.yaml:4:11: tasks[0].copy: give exactly one of content and src
xftctl: $TEST_TMP/broken.yaml:4:22: tasks[0].copy.contnet: unknown field (did you mean content?)" "$ERR" "error lines"
echo "playbook_run: ok"
