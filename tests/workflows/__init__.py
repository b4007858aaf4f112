"""The workflows on a real dev server: runs, sessions, approvals, forks, threads, replay."""
