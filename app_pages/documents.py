"""Documents: the person's own files as sources. Upload, list, search, group, delete."""

from __future__ import annotations

import streamlit as st

from dashboard import documents_view as dv
from dashboard import ui, views
from storage import documents as docstore

store = ui.store()
state = st.session_state

st.title("Documents")
st.write("Add your own reports, papers, contracts or notes. A research run can read them "
         "instead of the web or together with it (choose under Sources on New research), and "
         "its report cites them by page or section.")

collections = [c.name for c in docstore.list_collections(store)]

with st.form("doc_upload", clear_on_submit=True):
    files = st.file_uploader("Add documents", type=dv.UPLOAD_TYPES, accept_multiple_files=True,
                             help=dv.upload_help())
    cols = st.columns(2)
    chosen = cols[0].selectbox("Add to collection", ["", *collections],
                               format_func=lambda n: n or "No collection")
    typed = cols[1].text_input("or a new collection", placeholder="e.g. Heat pump studies")
    submitted = st.form_submit_button("Add to library", type="primary",
                                      icon=":material/upload_file:")
if submitted:
    try:
        target = dv.collection_for_upload(chosen, typed)
    except ValueError as exc:
        st.error(str(exc))
    else:
        if not files:
            st.warning("Choose one or more files first.")
        else:
            with st.spinner("Reading the files…"):
                state["doc_results"] = dv.add_uploads(
                    store, [(f.name, f.getvalue()) for f in files], target)
            st.rerun()
for result in state.get("doc_results") or []:
    (st.success if result.ok else st.warning)(dv.result_line(result))

docs = docstore.list_documents(store)
st.subheader("Your documents")
if not docs:
    st.info("No documents yet. Add PDF, Word, Markdown, text or HTML files above.")
    st.stop()

only = st.selectbox("Show", ["", *collections], key="doc_show",
                    format_func=lambda n: f"Collection: {n}" if n else "All documents")
shown = docstore.list_documents(store, collection=only) if only else docs
st.dataframe(dv.documents_frame(shown), hide_index=True, width="stretch",
             column_config={"Title": st.column_config.TextColumn(width="large")})

query = st.text_input("Search your documents", key="doc_query",
                      placeholder="words to find, e.g. payback time gas boiler")
if query.strip():
    scope = [d.id for d in shown] if only else None
    hits = docstore.search_passages(store, query, limit=10, document_ids=scope)
    if not hits:
        st.info("No passage matches these words.")
    for hit in hits:
        with st.container(border=True):
            st.markdown(f"**{dv.hit_heading(hit)}**")
            st.markdown(views.md_text(hit.text[:1200]))

st.subheader("Selected document")
labels = {d.id: f"{views.label_text(d.title, 80)} · {d.filename}" for d in shown}
if not labels:
    st.stop()
selected = st.selectbox("Document", list(labels), format_func=lambda d: labels[d], key="doc_selected")
doc = next(d for d in shown if d.id == selected)
if doc.message:
    st.warning(views.md_text(doc.message))
with st.expander(f"Passages ({doc.passages})"):
    for passage in docstore.get_passages(store, selected)[:200]:
        st.markdown(f"**{views.md_text(dv.passage_heading(passage))}**")
        st.markdown(views.md_text(passage.text))

cols = st.columns(2)
group = cols[0].selectbox("Collection", ["", *collections], key="doc_group",
                          format_func=lambda n: n or "choose a collection")
new_group = cols[1].text_input("or a new one", key="doc_group_new")
buttons = st.container(horizontal=True)
if buttons.button("Add to collection", icon=":material/playlist_add:"):
    try:
        name = dv.collection_for_upload(group, new_group)
    except ValueError as exc:
        st.error(str(exc))
    else:
        if name:
            docstore.add_to_collection(store, name, [selected])
            st.rerun()
        st.warning("Choose a collection or type a new name.")
if group and group in doc.collections and buttons.button(
        "Remove from collection", icon=":material/playlist_remove:"):
    docstore.remove_from_collection(store, group, [selected])
    st.rerun()
if buttons.button("Delete", icon=":material/delete:"):
    state["doc_confirm_delete"] = selected
if state.get("doc_confirm_delete") == selected:
    st.warning(f"Delete “{views.md_text(doc.title)}” and its passages from the library? "
               "Reports that already cite it keep their copy of the passages.")
    confirm = st.container(horizontal=True)
    if confirm.button("Delete for good", type="primary"):
        docstore.delete_document(store, selected)
        state.pop("doc_confirm_delete", None)
        st.rerun()
    if confirm.button("Cancel"):
        state.pop("doc_confirm_delete", None)
        st.rerun()

if collections:
    st.subheader("Collections")
    for c in docstore.list_collections(store):
        row = st.columns([4, 1])
        row[0].markdown(f"**{views.md_text(c.name)}** · {c.documents} document(s)")
        if row[1].button("Delete collection", key=f"del_coll_{c.name}",
                         help="The documents stay in the library."):
            docstore.delete_collection(store, c.name)
            st.rerun()
