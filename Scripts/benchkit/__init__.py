"""The parts of `Scripts/bench` (the entry point, with its usage): one module per concern.

common (sizes, installing, measuring) · datasets (generated set, real tree, memory set) · seaweed
(the S3 server) · tools (one class per row) · plan (phases, targets, goals) · bench (a run and
its JSON) · memory (--memory) · report (Markdown from the JSON) · pages (--render-docs).
"""
